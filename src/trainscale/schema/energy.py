"""Power and energy beyond the GPU board, added to a result table
(:func:`trainscale.sim.energy.with_node_power`): node, switches, facility."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

NODE_POWER_COLUMNS: tuple[Column, ...] = table("NODE_POWER_COLUMNS")
"""Columns :func:`trainscale.sim.energy.with_node_power` adds to a result table, in order."""

TRAINING_BILL_COLUMNS: tuple[Column, ...] = table("TRAINING_BILL_COLUMNS")
"""Columns :func:`trainscale.sim.energy.bill.with_training_bill` adds: time, energy per scope
and cost to train a number of tokens, each with its 80 % interval."""

ENERGY_BILL_COLUMNS: tuple[Column, ...] = table("ENERGY_BILL_COLUMNS")
"""Columns of ``results/paper/energy.parquet``: the paper setup's node energy per token and cost
per million tokens against GPU count, and the metered runs (:mod:`trainscale.paper.energy`)."""
