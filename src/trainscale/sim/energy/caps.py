"""Power caps: how node power and energy per token follow ``power_limit_w``, and the cap at which
energy per token is lowest for a plan.

A cap below the dense-compute draw lowers the SM clock during GEMM-bound phases (``P − P_idle ∝
f³``, :mod:`trainscale.sim.system.power`), so the step slows by less than the GPU's power falls:
**GPU-board** energy per token falls with every watt of cap down to the idle floor (the shape
Zeus measured: lower limits trade time for energy, https://ml.energy/zeus/research_overview/zeus/).
The **node** also pays its host (CPUs, DRAM, NICs, fans) for every second the step lasts, and the
host draws power even when the GPUs are capped, so node energy per token falls and then rises as
the slower step makes the host's share grow: it has a minimum at a cap between idle and the TDP,
the cap :func:`lowest_energy_caps` reports (node or facility scope; facility adds the switches and
PUE, proportional to time and node power). Node power rises with the cap and stays flat above
the draw the plan reaches uncapped.

The caps tried by default (:func:`default_caps`) run from the first multiple of
:data:`CAP_STEP_W` above the GPU's idle power plus :data:`CAP_STEP_W` to its TDP; a GPU's
driver may refuse caps below its own minimum (``nvidia-smi -q -d POWER``, "Min Power Limit").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy.node import with_node_power
from trainscale.sim.energy.terms import PowerTerms
from trainscale.sim.simulate import predict

__all__ = ["CAP_STEP_W", "cap_sweep", "default_caps", "lowest_energy_caps"]

#: Spacing of the default caps, watts.
CAP_STEP_W = 25.0


def default_caps(idle_w: float, tdp_w: float) -> list[float]:
    """Caps from the first multiple of :data:`CAP_STEP_W` at least ``idle_w + CAP_STEP_W`` up
    to ``tdp_w`` (the TDP itself always included)."""
    first = CAP_STEP_W * np.ceil((idle_w + CAP_STEP_W) / CAP_STEP_W)
    caps = list(np.arange(first, tdp_w, CAP_STEP_W))
    return [float(c) for c in caps] + [float(tdp_w)]


def cap_sweep(
    configuration: pd.DataFrame,
    caps: Sequence[float] | None,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
    terms: PowerTerms,
) -> pd.DataFrame:
    """Each row of ``configuration`` predicted at every cap (``caps``, or :func:`default_caps`
    of its GPU), with node and facility power (:func:`with_node_power`); a column ``config``
    names the input row (its position)."""
    frames = []
    for position, row in enumerate(configuration.to_dict("records")):
        gpu = catalogue.hardware.gpus[str(row["gpu"])]
        tried = list(caps) if caps else default_caps(gpu.idle_w, gpu.tdp_w)
        rows = pd.DataFrame([{**row, "power_limit_w": float(cap)} for cap in tried])
        frames.append(predict(rows, catalogue=catalogue, calibration=calibration,
                              origin="power caps").assign(config=position))  # fmt: skip
    swept = pd.concat(frames, ignore_index=True)
    return with_node_power(swept, catalogue.hardware, terms)


def lowest_energy_caps(sweep: pd.DataFrame, scope: str = "node") -> pd.DataFrame:
    """Per ``config`` of :func:`cap_sweep`, the row at the cap with the lowest energy per token
    at ``scope`` (``gpu``, ``node`` or ``facility``; on a tie the higher, faster cap)."""
    column = {"gpu": "energy_j_per_token", "node": "energy_j_per_token_node",
              "facility": "energy_j_per_token_facility"}[scope]  # fmt: skip
    ordered = sweep.sort_values(["config", column, "power_limit_w"], ascending=[True, True, False],
                                kind="stable")  # fmt: skip
    return ordered.drop_duplicates("config").reset_index(drop=True)
