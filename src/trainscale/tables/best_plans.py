"""Table ``best_plans``: the fastest plan that fits in memory per model and GPU count.

From a sweep over plans (the ``best_plan`` study: tensor and pipeline degree, data-parallel
sharding, recomputation, micro-batch), keep per model and GPU count the configuration with the
highest tokens/s among those that fit in memory. Figure ``best_plan`` draws the same selection.

Unlike the claims table's model-parallel claim, which compares FSDP plans only (as the paper did),
every data-parallel sharding is a candidate here (DDP, ZeRO-1, FSDP, HSDP), so the best plan can
differ. A plan with one data-parallel replica (dp = 1) has nothing to replicate or shard: its
``sharding`` reads ``none (dp = 1)`` whatever the sweep row said. ``plans_fitting`` counts the
swept plans that fit in memory at that model and GPU count (the row is the fastest of them). The
calibration id is the same for every row and goes to the caption, not a column. The selection
(:func:`~trainscale.report.best_plans.best_plans`) lives in :mod:`trainscale.report`, below
this table and the figure, and is re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.report.best_plans import best_plans
from trainscale.study.report import within_usable_memory

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = [
    "render",
]


def render(
    stem: str | os.PathLike[str], sim: pd.DataFrame, *, models: Mapping[str, ModelShape]
) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``; ``models`` is the model catalogue (the order by size)."""
    from trainscale.report import write_table

    table = best_plans(sim, models=models)
    fits = sim[within_usable_memory(sim)]
    ids = ", ".join(sorted({str(i) for i in fits["calibration_id"].dropna()})) or "unknown"
    return write_table(
        table,
        stem,
        label="tab:best_plans",
        caption="Fastest plan that fits in memory per model and GPU count (simulated with "
        f"trainscale calibration {ids}; H100, sequence 4,096, global batch 2,048 sequences). "
        "Candidates: every swept tp, pp, sharding (DDP, ZeRO-1, FSDP, HSDP), recomputation "
        "and micro-batch; the claims table's model-parallel claim compares FSDP plans only, "
        "so its best plan can differ. plans\\_fitting: how many swept plans fit in memory at "
        "that model and GPU count (the row is the fastest of them). sharding 'none (dp = 1)': "
        "one data-parallel replica, nothing replicated or sharded.",
        float_format={
            "tokens_per_s": ",.0f",
            "tokens_per_s_per_gpu": ",.0f",
            "mfu_pct": ".1f",
            "mem_gib_per_gpu": ".1f",
            "power_w_per_gpu": ".0f",
            "exposed_comm_pct": ".1f",
        },
    )
