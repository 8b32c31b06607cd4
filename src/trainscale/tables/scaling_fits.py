"""Table ``scaling_fits``: regression models of throughput and power against GPU count.

Per series — rows that share source, model, GPU, plan (``tp×pp``, sharding, recomputation),
sequence length and batch rule, and differ only in GPU count — three fits
(:func:`trainscale.fits.scaling.fit_scaling_series`, shared with the per-study fits of
:mod:`trainscale.tables.study_fits`):

- ``log2(tokens/s per GPU) ~ log2(GPUs)`` and ``log2(power per GPU) ~ log2(GPUs)``: ordinary
  least squares with HC3 errors (:func:`trainscale.fits.fit_loglog`); the slope is the elasticity
  (0 = flat) and ``pct_per_doubling`` the change when the GPU count doubles, each with its 95 %
  interval;
- the Universal Scalability Law of whole-job tokens/s, ``X(N) = X₁N / (1 + σ(N−1) + κN(N−1))``
  with σ, κ ≥ 0 (:func:`trainscale.fits.fit_usl_table`): σ, κ and the peak ``N* = √((1−σ)/κ)``,
  each with its 95 % interval (``inf`` when the data allow no peak).

The table is long: one row per series, metric and parameter, with ``estimate``, ``ci_low``,
``ci_high``, ``r2`` and ``n``. Series come from the simulated scale-out studies
(:data:`~trainscale.report.select.SCALING_STUDIES`; a configuration simulated by two of them
counts once) and from the published and measured rows of the dataset; only series with at
least :data:`MIN_COUNTS` distinct GPU counts are fitted, so every row carries an interval.
Simulated series keep the global batch fixed while GPUs are added; published series
(llm-foundry) keep the micro-batch per GPU fixed, so their global batch grows with the GPU
count (``batch`` says which).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.fits.scaling import fit_scaling_series
from trainscale.report.select import SCALING_STUDIES, paper_micro_batch, require
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    SCALING_FIT_COLUMNS,
    SCALING_SERIES_COLUMNS,
    names,
)
from trainscale.study.report import within_usable_memory

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = [
    "MIN_COUNTS",
    "SOURCE_LABELS",
    "render",
    "scaling_fits",
    "scaling_series",
]

#: Fewest distinct GPU counts a series needs (USL intervals need 4 points for 3 parameters).
MIN_COUNTS = 4

_CONFIG = [c.name for c in CONFIGURATION_COLUMNS]


#: How the table names each ``source`` value of the dataset (``sim`` is the dataset's).
SOURCE_LABELS = {"sim": "simulated"}


def _number(value: object) -> str:
    """A value as text: an integral number without ``.0`` (tp 1, not 1.0), missing as ``""``."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _text(series: pd.Series) -> pd.Series:
    return series.astype(object).map(_number).astype(str)


def scaling_series(
    frame: pd.DataFrame,
    studies: Sequence[str] = SCALING_STUDIES,
    *,
    models: Mapping[str, ModelShape],
) -> pd.DataFrame:
    """Rows of ``frame`` (dataset schema) that belong to scale-out series, with the series
    columns :data:`trainscale.schema.SCALING_SERIES_COLUMNS` added; simulated rows that do not
    fit in memory, come from other studies or do not follow the paper setup's micro-batch rule
    (:func:`~trainscale.report.select.paper_micro_batch`) are left out. A row without a model
    key is named after the model of ``models`` (the model catalogue) with its shape."""
    require(
        frame,
        [
            "source",
            "num_gpus",
            "gpu",
            "tp",
            "pp",
            "sharding",
            "recompute",
            "seq_len",
            "global_batch",
            "micro_batch",
            "tokens_per_s",
        ],
        where="scaling_fits",
    )
    sim = frame[frame["source"] == "sim"]
    if "study" in sim.columns:
        sim = sim[sim["study"].isin(list(studies))]
    if "fits_memory" in sim.columns:
        sim = sim[within_usable_memory(sim)]
    rows = pd.concat([paper_micro_batch(sim), frame[frame["source"] != "sim"]], ignore_index=True)
    config = [c for c in _CONFIG if c in rows.columns]
    rows = rows.drop_duplicates([*config, "source"]).copy()
    sim = rows["source"] == "sim"
    origin = pd.Series("", index=rows.index, dtype=object)
    for column in ("citation", "run_id", "study"):
        if column in rows.columns:
            origin = origin.where(origin != "", _text(rows[column]))
    rows["origin"] = origin.where(~sim, "simulated scale-out studies")
    model = _text(rows["model"]) if "model" in rows.columns else pd.Series("", index=rows.index)
    rows["model"] = model.where(model != "", rows.apply(_shape_name, axis=1, models=models))
    rows["plan"] = (
        "tp"
        + _text(rows["tp"])
        + "×pp"
        + _text(rows["pp"])
        + " "
        + _text(rows["sharding"])
        + ", recompute "
        + _text(rows["recompute"])
    )
    rows["batch"] = np.where(
        sim,
        "global " + _text(rows["global_batch"]) + " (fixed)",
        "micro " + _text(rows["micro_batch"]) + " per GPU",
    )
    rows["source"] = rows["source"].astype(object).replace(SOURCE_LABELS)
    return rows


def _shape_name(row: pd.Series, models: Mapping[str, ModelShape]) -> str:
    """The model of ``models`` with this row's shape, else ``<layers>L h<hidden>``."""
    shape = tuple(row.get(c) for c in ("layers", "hidden", "heads", "ffn", "vocab"))
    for key, m in models.items():
        if shape == (m.layers, m.hidden, m.heads, m.ffn, m.vocab):
            return key
    return f"{_number(row.get('layers'))}L h{_number(row.get('hidden'))}"


def scaling_fits(
    frame: pd.DataFrame,
    studies: Sequence[str] = SCALING_STUDIES,
    min_counts: int = MIN_COUNTS,
    *,
    models: Mapping[str, ModelShape],
) -> pd.DataFrame:
    """Fit every scale-out series of ``frame`` (see the module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows in the dataset schema (``results/dataset``), any sources.
    studies : sequence of str
        Simulated studies whose rows form series.
    min_counts : int
        Fewest distinct GPU counts a series needs.
    models : mapping of str to ModelShape
        The model catalogue (``data/models.yaml``): names a row that carries a shape but no
        model key (a published or measured row).

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.SCALING_FIT_COLUMNS`. ``metric``: ``tokens_per_s_per_gpu`` or
        ``power_w_per_gpu`` (``fit`` = ``loglog_hc3``; ``parameter`` = ``slope`` or
        ``pct_per_doubling``), or ``tokens_per_s`` (``fit`` = ``usl``; ``parameter`` =
        ``sigma``, ``kappa`` or ``n_star``); ``estimate``, ``ci_low``, ``ci_high`` (95 %);
        ``r2`` of the fit (log per-GPU scale, for the USL too: see
        :attr:`trainscale.fits.usl_fit.UslFit.r2`); ``n`` points; ``gpus_min``, ``gpus_max``;
        ``note`` from the fit.
    """
    rows = scaling_series(frame, studies, models=models)
    by = names(SCALING_SERIES_COLUMNS)
    counts = rows.groupby(by, dropna=False)["num_gpus"].transform("nunique")
    rows = rows[counts >= min_counts]
    out = []
    for key, series in rows.groupby(by, sort=True, dropna=False):
        head = dict(zip(by, key, strict=True))
        n = pd.to_numeric(series["num_gpus"])
        extent = {"gpus_min": int(n.min()), "gpus_max": int(n.max())}
        for fit in fit_scaling_series(series, min_points=min_counts):
            note = fit.pop("note")
            out.append({**head, **fit, **extent, "note": note})
    table = pd.DataFrame(out, columns=names(SCALING_FIT_COLUMNS))
    return table.astype(
        {"n": "int64", "gpus_min": "int64", "gpus_max": "int64", "seq_len": "int64"}
    )


def render(
    stem: str | os.PathLike[str], dataset: pd.DataFrame, *, models: Mapping[str, ModelShape]
) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``; ``models`` is the model catalogue (see :func:`scaling_fits`)."""
    from trainscale.report import write_table

    table = scaling_fits(dataset, models=models)
    return write_table(
        table,
        stem,
        label="tab:scaling_fits",
        caption="Scaling fits per series: log-log slope of tokens/s and power per GPU against "
        "GPU count (OLS, HC3, 95\\% CI) and the USL of whole-job tokens/s (95\\% CI); r2 of "
        "log tokens/s per GPU for every fit.",
        float_format={"estimate": _compact, "ci_low": _compact, "ci_high": _compact, "r2": ".3f"},
    )


def _compact(value: float) -> str:
    """Four significant digits, exponent for very small or large values."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    return f"{value:.3e}" if magnitude < 1e-3 or magnitude >= 1e6 else f"{value:.4g}"
