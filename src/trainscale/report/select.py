"""Row selection shared by the paper's figures and tables: column checks, orders, the paper
setup's rows and the fastest plan per point.

Figures and tables draw and list the same selections (the best plan per model and GPU count,
the rows that follow the paper's micro-batch rule, models by size): each is written once here,
below both, so that neither imports the other. The catalogues that orders come from are passed
in by the caller; nothing here loads one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.paper.values import PAPER_MICRO_BATCH
from trainscale.study.report import within_usable_memory

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "SCALING_STUDIES",
    "best_rows",
    "fastest_recompute",
    "gpu_order",
    "model_order",
    "paper_micro_batch",
    "require",
]

#: The scale-out studies whose simulated series the ``scaling_fits`` table fits (a configuration
#: simulated by two of them counts once); its ``dataset`` input is read with them
#: (:func:`trainscale.report.registry.load_input`, kind ``dataset_scaling``).
SCALING_STUDIES: tuple[str, ...] = ("fsdp_scaleout", "hardware_generations", "power_efficiency")


def require(df: pd.DataFrame, columns: Sequence[str], *, where: str) -> None:
    """Raise :class:`TrainscaleError` naming the columns of ``columns`` missing from ``df``."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TrainscaleError(f"{where}: missing column(s) {missing}; got {list(df.columns)}")


def model_order(keys: Iterable[str], models: Mapping[str, ModelShape]) -> list[str]:
    """Model keys sorted by parameter count in ``models`` (the model catalogue; its models
    first, unknown ones by name)."""
    known = sorted({k for k in keys if k in models}, key=lambda k: models[k].params)
    return known + sorted({k for k in keys if k not in models})


def gpu_order(keys: Iterable[str], hardware: HardwareCatalog) -> list[str]:
    """GPU keys in the order of ``hardware`` (the GPU catalogue: generation order), unknown
    ones last by name."""
    catalogue = list(hardware.gpus)
    keys = set(keys)
    return [k for k in catalogue if k in keys] + sorted(keys - set(catalogue))


def paper_micro_batch(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that follow the paper setup's micro-batch rule: ``min(PAPER_MICRO_BATCH, local
    batch)`` sequences per GPU, with local batch = ``global_batch / dp``
    (:mod:`trainscale.paper.values`). Studies sweep ``micro_batch: [1, 2]`` (a study file cannot
    write the minimum) and the figures keep these rows."""
    require(df, ["micro_batch", "global_batch", "dp"], where="paper_micro_batch")
    local = pd.to_numeric(df["global_batch"]) // pd.to_numeric(df["dp"])
    wanted = np.minimum(PAPER_MICRO_BATCH, local)
    return df[pd.to_numeric(df["micro_batch"]) == wanted].reset_index(drop=True)


def fastest_recompute(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """One row per series (``by``) and GPU count: the recompute mode with the highest
    ``tokens_per_s`` among those that fit in memory (ties: the lighter mode); points that fit in
    no mode are dropped.

    The paper setup runs without recomputation, and that is the faster mode wherever it fits
    at the paper's batch; where activations do not fit (Llama-2 70B on 80 GB), or where a larger
    micro-batch with recomputation beats many small ones, the figures show the recomputed plan
    with an open marker (:func:`trainscale.figures._common.plot_series`).
    """
    require(
        df,
        [*by, "recompute", "fits_memory", "num_gpus", "tokens_per_s"],
        where="fastest_recompute",
    )
    fits = df[within_usable_memory(df)].copy()
    order = {"none": 0, "selective": 1, "full": 2}
    fits["_order"] = fits["recompute"].map(order).fillna(9)
    fits["_neg"] = -fits["tokens_per_s"]
    fits = fits.sort_values([*by, "num_gpus", "_neg", "_order"], kind="stable")
    kept = fits.drop_duplicates([*by, "num_gpus"]).drop(columns=["_order", "_neg"])
    return kept.reset_index(drop=True)


def best_rows(df: pd.DataFrame, by: Sequence[str], metric: str = "tokens_per_s") -> pd.DataFrame:
    """The row with the highest ``metric`` per group ``by`` among rows that fit memory."""
    fits = df[within_usable_memory(df)] if "fits_memory" in df.columns else df
    if fits.empty:
        return fits
    ordered = fits.sort_values(metric, ascending=False, kind="stable")
    return ordered.drop_duplicates(list(by)).sort_values(list(by), kind="stable")
