"""Held-out accuracy: the rows of ``results/holdout.parquet`` and the summaries built on them.

The headline accuracy is the error on a source when it is left out of the fit (README,
"Calibration and accuracy"): :func:`trainscale.calibrate.fit.held_out_predictions` refits without
each source and predicts it. This module turns those predictions into the workflow's table
(:func:`holdout_rows`, :data:`HOLDOUT_COLUMNS`) and summarises them beside the in-sample error of
the shipped calibration, per source or per framework (:func:`accuracy`); it also summarises the
nccl-tests bus-bandwidth rows, all sizes and the sizes precise enough to score
(:func:`collective_accuracy`). ``trainscale validate --holdout``, the ``validation`` table and the
``sim_vs_published`` figure all read these functions, so they show the same numbers.

Every function takes DataFrames and returns one; none runs a fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.published.summary import summarise
from trainscale.schema import (
    ACCURACY_COLUMNS,
    COLLECTIVE_ACCURACY_COLUMNS,
    HOLDOUT_COLUMNS,
    names,
)

__all__ = [
    "HOLDOUT_COLUMNS",
    "MIN_SCORED_SIZE_BYTES",
    "PROBLEM_REPORT_SOURCES",
    "accuracy",
    "collective_accuracy",
    "holdout_rows",
    "in_sample_throughput",
    "with_held_out",
]

#: nccl-tests rows below this message size (16 MiB) come from plots read to about ±5 GB/s, too
#: coarse to score; :func:`collective_accuracy` reports them with all sizes and leaves them out of
#: the scored block.
MIN_SCORED_SIZE_BYTES = 16 * 2**20

#: Sources whose nccl-tests rows are problem reports: bandwidth lower than the reporter expected,
#: posted to ask what is wrong. The data README (data/published/README.md, section "NCCL GitHub
#: issues") says to use them "as real-world spread, not as attainable peaks"; the simulator
#: predicts a healthy cluster, so :func:`collective_accuracy` scores the large messages once
#: with them and once without them, and reports both.
PROBLEM_REPORT_SOURCES: tuple[str, ...] = ("NCCL GitHub issues (user reports)",)


def _require(frame: pd.DataFrame, columns, where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TrainscaleError(f"{where}: missing column(s) {missing}; got {list(frame.columns)}")


def holdout_rows(
    held_out: pd.DataFrame, *, calibration_id: str, simulator_version: str
) -> pd.DataFrame:
    """The table ``results/holdout.parquet`` holds.

    Parameters
    ----------
    held_out : pandas.DataFrame
        :func:`trainscale.calibrate.fit.held_out_predictions` (``csv_row``, ``citation``,
        ``framework``, ``model_name``, ``num_gpus``, ``gpu``, ``observed_tokens_per_s_per_gpu``,
        ``predicted_tokens_per_s_per_gpu``, ``error_pct``, ``ape_pct``).
    calibration_id, simulator_version : str
        Provenance: the shipped calibration the held-out error is compared with, and the
        trainscale version.

    Returns
    -------
    pandas.DataFrame
        :data:`HOLDOUT_COLUMNS`, typed as :func:`trainscale.io.parquet.conform` types them, sorted
        by ``csv_row``.
    """
    from trainscale.io.parquet import conform_by_csv_row

    _require(held_out, names(HOLDOUT_COLUMNS[:-2]), "holdout_rows")
    return conform_by_csv_row(
        held_out,
        HOLDOUT_COLUMNS,
        calibration_id=calibration_id,
        simulator_version=simulator_version,
    )


def in_sample_throughput(validation: pd.DataFrame) -> pd.DataFrame:
    """The predicted throughput rows of the shipped calibration, in one shape.

    Accepts ``results/validation.parquet`` (``status``, ``kind``, ``observed``, ``predicted``;
    :data:`trainscale.schema.VALIDATION_COLUMNS`) or the ``throughput`` table of
    :func:`trainscale.published.accuracy.validate_published`; returns its rows with
    ``observed_tokens_per_s_per_gpu``, ``predicted_tokens_per_s_per_gpu`` and ``ape_pct``
    (rows without both values are left out), other columns as given.
    """
    if "observed_tokens_per_s_per_gpu" not in validation.columns:
        _require(
            validation,
            ["citation", "kind", "status", "observed", "predicted"],
            "in_sample_throughput",
        )
        rows = validation[
            (validation["kind"] == "throughput") & (validation["status"] == "predicted")
        ]
        validation = rows.rename(
            columns={
                "observed": "observed_tokens_per_s_per_gpu",
                "predicted": "predicted_tokens_per_s_per_gpu",
            }
        )
    values = ["observed_tokens_per_s_per_gpu", "predicted_tokens_per_s_per_gpu"]
    rows = validation.dropna(subset=values).reset_index(drop=True)
    if "ape_pct" not in rows.columns:
        observed = rows[values[0]].astype(float)
        rows["ape_pct"] = (100 * (rows[values[1]].astype(float) - observed) / observed).abs()
    return rows


def _summary(rows: pd.DataFrame, by: str) -> pd.DataFrame:
    rows = rows.dropna(subset=["ape_pct", by]).astype({"ape_pct": float})
    if rows.empty:
        label = "source" if by == "citation" else by
        return pd.DataFrame(
            {label: ["all"], "rows": [0], "mape_pct": [np.nan], "median_ape_pct": [np.nan],
             "max_ape_pct": [np.nan]}
        )  # fmt: skip
    return summarise(rows, by=by)


def accuracy(holdout: pd.DataFrame, in_sample: pd.DataFrame, by: str = "citation") -> pd.DataFrame:
    """Held-out error per source (or per framework) with the in-sample MAPE beside it.

    Parameters
    ----------
    holdout : pandas.DataFrame
        ``results/holdout.parquet`` or :func:`trainscale.calibrate.fit.held_out_predictions`
        (``csv_row``, ``citation``, ``framework``, ``ape_pct``).
    in_sample : pandas.DataFrame
        The shipped calibration's rows (:func:`in_sample_throughput` of
        ``results/validation.parquet``): ``citation``, ``ape_pct``, and ``framework`` or
        ``csv_row`` (the framework is then taken from ``holdout``).
    by : {"citation", "framework"}
        What to group by.

    Returns
    -------
    pandas.DataFrame
        First column ``source`` (by citation) or ``framework``, then
        :data:`trainscale.schema.ACCURACY_COLUMNS`: ``rows`` held out; ``held_out_mape_pct``,
        ``held_out_median_ape_pct``, ``held_out_max_ape_pct`` (% error of tokens/s per GPU, each
        source predicted by a fit without it); ``in_sample_mape_pct`` (the shipped calibration,
        fitted on all sources; NaN where that group has no in-sample row). Groups sorted by
        name, then ``all``.
    """
    label = "source" if by == "citation" else by
    _require(holdout, [by, "ape_pct"], "accuracy")
    in_sample = in_sample_throughput(in_sample)
    if by not in in_sample.columns:
        _require(in_sample, ["csv_row"], "accuracy (in-sample rows)")
        lookup = holdout.drop_duplicates("csv_row").set_index("csv_row")[by]
        in_sample = in_sample.assign(**{by: in_sample["csv_row"].map(lookup)})
    held = _summary(holdout, by).rename(
        columns={
            "mape_pct": "held_out_mape_pct",
            "median_ape_pct": "held_out_median_ape_pct",
            "max_ape_pct": "held_out_max_ape_pct",
        }
    )
    fitted = _summary(in_sample, by).set_index(label)["mape_pct"]
    held["in_sample_mape_pct"] = held[label].map(fitted).astype(float)
    return held[[label, *names(ACCURACY_COLUMNS)]].astype({"rows": "int64"})


def collective_accuracy(collectives: pd.DataFrame) -> pd.DataFrame:
    """Error of the nccl-tests bus bandwidths, all sizes and the scored sizes (≥ 16 MiB).

    Parameters
    ----------
    collectives : pandas.DataFrame
        :func:`trainscale.published.accuracy.collective_predictions` (``citation``, ``size_bytes``,
        ``ape_pct``), or the collective rows of ``results/validation.parquet`` with
        ``size_bytes`` added.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.COLLECTIVE_ACCURACY_COLUMNS`: ``sizes`` (``all``,
        ``>= 16 MiB``, and ``>= 16 MiB, no problem reports``: without
        :data:`PROBLEM_REPORT_SOURCES`); ``source`` (citation, then ``all``); ``rows``;
        ``mape_pct``, ``median_ape_pct``, ``max_ape_pct`` (% error of bus bandwidth, GB/s).
        Below 16 MiB the published values are read from plots to about ±5 GB/s
        (:data:`MIN_SCORED_SIZE_BYTES`). Empty when there are no rows.
    """
    if collectives.empty:
        from trainscale.io.parquet import conform

        return conform(pd.DataFrame(), COLLECTIVE_ACCURACY_COLUMNS)
    _require(collectives, ["citation", "size_bytes", "ape_pct"], "collective_accuracy")
    rows = collectives.dropna(subset=["ape_pct"])
    large = rows[rows["size_bytes"].astype(float) >= MIN_SCORED_SIZE_BYTES]
    parts = [_summary(rows, "citation").assign(sizes="all")]
    if not large.empty:
        parts.append(_summary(large, "citation").assign(sizes=">= 16 MiB"))
        healthy = large[~large["citation"].isin(PROBLEM_REPORT_SOURCES)]
        if len(healthy) < len(large):
            parts.append(
                _summary(healthy, "citation").assign(sizes=">= 16 MiB, no problem reports")
            )
    table = pd.concat(parts, ignore_index=True)[names(COLLECTIVE_ACCURACY_COLUMNS)]
    return table.astype({"rows": "int64"})


def with_held_out(in_sample: pd.DataFrame, holdout: pd.DataFrame) -> pd.DataFrame:
    """The per-row in-sample table with the held-out prediction beside each row.

    Adds ``held_out_predicted_tokens_per_s_per_gpu``, ``held_out_error_pct`` and
    ``held_out_ape_pct`` (from ``holdout``, matched on ``csv_row``; NaN for a row with no
    held-out prediction) to ``in_sample`` (rows and order kept).
    """
    _require(in_sample, ["csv_row"], "with_held_out")
    _require(
        holdout,
        ["csv_row", "predicted_tokens_per_s_per_gpu", "error_pct", "ape_pct"],
        "with_held_out",
    )
    held = holdout.drop_duplicates("csv_row").set_index("csv_row")
    out = in_sample.copy()
    for name in ("predicted_tokens_per_s_per_gpu", "error_pct", "ape_pct"):
        out[f"held_out_{name}"] = out["csv_row"].map(held[name]).astype(float)
    return out
