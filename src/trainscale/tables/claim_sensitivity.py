"""Table ``claim_sensitivity``: the paper's claims along the profile of the NCCL latency scale.

At 2,048 GPUs with one sequence per GPU, FSDP's per-layer AllGather and ReduceScatter run on
rings of 2,047 steps whose time is mostly NCCL's per-step latency, so the headline throughput drop
moves with ``nccl_latency_scale``. The published measurements barely constrain that parameter
(their nccl-tests rows span at most 16 GPUs and large messages; their FSDP runs stop at 512 GPUs
where the rings stay hidden). This table prints ``results/paper/claim_sensitivity.parquet``
(rule ``claim_sensitivity``, :func:`trainscale.paper.sensitivity.claim_sensitivity`): the
parameter pinned at each value of :data:`trainscale.paper.sensitivity.LATENCY_SCALE_GRID`
and at its calibrated value, every other parameter refitted, the fit's error beside the claims.
``calibrated`` marks the row of ``data/calibration.yaml``'s value. Nothing is fitted here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.paper.values import PAPER_THROUGHPUT_DROP_PCT
from trainscale.report.select import require
from trainscale.schema import (
    CLAIM_SENSITIVITY_COLUMNS,
    CLAIM_SENSITIVITY_TABLE_COLUMNS,
    names,
)

__all__ = ["render"]


def render(stem: str | os.PathLike[str], sensitivity: pd.DataFrame) -> tuple[Path, ...]:
    """Write ``sensitivity`` (``results/paper/claim_sensitivity.parquet``) as
    ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    require(sensitivity, names(CLAIM_SENSITIVITY_COLUMNS), where="claim_sensitivity")
    reference = ", ".join(sorted({str(c) for c in sensitivity["reference_calibration_id"]}))
    return write_table(
        sensitivity[names(CLAIM_SENSITIVITY_TABLE_COLUMNS)],
        stem,
        label="tab:claim_sensitivity",
        caption="The paper's claims with nccl\\_latency\\_scale pinned at each value and every "
        "other parameter refitted to the published measurements (trainscale calibration "
        f"{reference} marks the calibrated row). The fit's error barely moves "
        f"while the 128 to 2,048 GPU throughput drop (study: {PAPER_THROUGHPUT_DROP_PCT:g} %) "
        "spans most of its range.",
        decimals=2,
    )
