"""The fastest plan that fits in memory per model and GPU count, the selection that table
``best_plans`` lists and figure ``best_plan`` draws.

From a sweep over plans (the ``best_plan`` study: tensor and pipeline degree, data-parallel
sharding, recomputation, micro-batch), keep per model and GPU count the configuration with the
highest tokens/s among those that fit in memory. Every data-parallel sharding is a candidate
(DDP, ZeRO-1, FSDP, HSDP). A plan with one data-parallel replica (dp = 1) has nothing to
replicate or shard: its ``sharding`` reads :data:`NO_DATA_PARALLEL` whatever the sweep row said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.report.select import model_order, require
from trainscale.schema import BEST_PLAN_COLUMNS, names
from trainscale.study.report import within_usable_memory

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = ["NO_DATA_PARALLEL", "best_plans"]

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
    fits = sim[within_usable_memory(sim)]
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
