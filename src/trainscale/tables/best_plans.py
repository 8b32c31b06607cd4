"""Table ``best_plans``: the fastest plan that fits in memory per model and GPU count.

From a sweep over plans (the ``best_plan`` study: tensor and pipeline degree, data-parallel
sharding, recomputation, micro-batch), keep per model and GPU count the configuration with the
highest tokens/s among those that fit in memory. Figure ``best_plan`` draws the same selection.

Unlike the claims table's model-parallel claim, which compares FSDP plans only (as the paper did),
every data-parallel sharding is a candidate here (DDP, ZeRO-1, FSDP, HSDP), so the best plan can
differ. A plan with one data-parallel replica (dp = 1) has nothing to replicate or shard: its
``sharding`` reads ``none (dp = 1)`` whatever the sweep row said. ``plans_fitting`` counts the
swept plans that fit in memory at that model and GPU count (the row is the fastest of them). The
calibration id is the same for every row and goes to the caption, not a column.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.figures._common import model_order, require
from trainscale.schema import BEST_PLAN_COLUMNS, names

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = ["NO_DATA_PARALLEL", "best_plans", "render"]

#: ``sharding`` shown for a plan with one data-parallel replica.
NO_DATA_PARALLEL = "none (dp = 1)"

_INPUT = (
    "model",
    "gpu",
    "num_gpus",
    "tp",
    "pp",
    "dp",
    "sharding",
    "recompute",
    "micro_batch",
    "grad_accum",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "mem_gib_per_gpu",
    "power_w_per_gpu",
    "exposed_comm_frac",
    "fits_memory",
    "calibration_id",
)


def best_plans(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> pd.DataFrame:
    """Best plan (highest tokens/s among those that fit in memory) per model, GPU and count;
    ``models`` is the model catalogue (``data/models.yaml``), which orders the models by size.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.BEST_PLAN_COLUMNS`: the plan (``tp``, ``pp``, ``dp``, ``sharding``,
        ``recompute``, ``micro_batch``, ``grad_accum``), ``tokens_per_s`` (whole job),
        ``tokens_per_s_per_gpu``, ``mfu_pct`` (%), ``mem_gib_per_gpu`` (GiB),
        ``power_w_per_gpu`` (W), ``exposed_comm_pct`` (% of the step) and ``plans_fitting``
        (how many swept plans fit in memory at that model and count; this is the fastest);
        sorted by model size then GPU count. ``sharding`` is :data:`NO_DATA_PARALLEL` where
        dp = 1. Model/count pairs where nothing fits are left out.
    """
    require(sim, _INPUT, where="best_plans")
    fits = sim[sim["fits_memory"].astype(bool)]
    keys = ["model", "gpu", "num_gpus"]
    counts = fits.groupby(keys).size().rename("plans_fitting")
    best = fits.sort_values("tokens_per_s", ascending=False, kind="stable").drop_duplicates(keys)
    best = best.join(counts, on=keys)
    best = best.assign(
        mfu_pct=100 * best["mfu"],
        exposed_comm_pct=100 * best["exposed_comm_frac"],
        sharding=best["sharding"].astype(str).where(best["dp"] != 1, NO_DATA_PARALLEL),
    )
    order = {m: i for i, m in enumerate(model_order(best["model"].unique(), models))}
    best = best.assign(_m=best["model"].map(order)).sort_values(["_m", "gpu", "num_gpus"])
    out = best[names(BEST_PLAN_COLUMNS)].reset_index(drop=True)
    return out.astype(
        {
            c: "int64"
            for c in ("num_gpus", "tp", "pp", "dp", "micro_batch", "grad_accum", "plans_fitting")
        }
    )


def render(
    stem: str | os.PathLike[str], sim: pd.DataFrame, *, models: Mapping[str, ModelShape]
) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``; ``models`` is the model catalogue (the order by size)."""
    from trainscale.report import write_table

    table = best_plans(sim, models=models)
    fits = sim[sim["fits_memory"].astype(bool)]
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
