"""Power beyond the GPU board (node, switches, facility) and what a training run costs.

:mod:`.terms` holds the calibrated node-power terms (the ``power`` block of
``data/calibration.yaml``); :mod:`.node` adds node, switch and facility power and energy per
token to a result table. Functions take and return result DataFrames, so that ``predict``, the
study points and ``plan`` add the same columns.
"""

from trainscale.sim.energy.node import NODE_POWER_COLUMNS, with_node_power
from trainscale.sim.energy.terms import PowerTerms, load_power_terms

__all__ = ["NODE_POWER_COLUMNS", "PowerTerms", "load_power_terms", "with_node_power"]
