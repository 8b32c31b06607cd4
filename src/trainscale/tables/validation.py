"""Table ``validation``: the simulator's error against every published source, held out first.

The headline is the error on a source when it is left out of the fit (README, "Calibration and
accuracy"): for tokens/s per GPU, each source's rows as predicted by a fit to all the other
sources (``results/holdout.parquet``), with the in-sample MAPE of the shipped calibration
(``results/validation.parquet``, fitted on every source) beside it; per source, then per
framework, then over all rows (:func:`trainscale.published.holdout.accuracy`). Then the nccl-tests
bus
bandwidths, which every fit uses, so in sample only: all sizes, and the messages of 16 MiB and
more (smaller ones are read from plots to about ±5 GB/s; :func:`trainscale.published.holdout.
collective_accuracy`). Last, the sources none of whose rows of a quantity could be predicted
(power figures, rows without a model shape, ...), under that quantity, with the reasons.

The held-out blocks also report the 80 % prediction intervals' coverage, measured source-out
(:func:`trainscale.sim.intervals.source_out_coverage` of the held-out rows: each source's rows
against intervals computed without that source) and their median width.

Last, the measured runs (``results/sim_vs_measured.parquet``) whose ingestion warned, each with
its warnings (block ``measured, with warnings``; absent when none warned).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from trainscale.published.holdout import accuracy, collective_accuracy, in_sample_throughput
from trainscale.report.select import require
from trainscale.schema import VALIDATION_TABLE_COLUMNS, names

__all__ = ["readable_reason", "render", "validation_table"]

_THROUGHPUT = "tokens/s per GPU"
_POWER = "power"
_BUSBW = "nccl-tests bus bandwidth"
_MEASURED_WARNED = "measured, with warnings"
_REASONS = (
    (re.compile(r"GPU count not stated \((?:empty|)\)"), "GPU count not published"),
    (re.compile(r"GPU count not stated \((.+)\)"), r"GPU count not one number (source: '\1')"),
)


def readable_reason(reason: str) -> str:
    """A reject reason as the table prints it: ``GPU count not stated (8 and 128)`` becomes
    ``GPU count not one number (source: '8 and 128')``, ``... (empty)`` ``GPU count not
    published``; other reasons are kept."""
    text = str(reason)
    for pattern, replacement in _REASONS:
        if pattern.fullmatch(text):
            return pattern.sub(replacement, text)
    return text


def _quantity(metric: object) -> str:
    text = "" if pd.isna(metric) else str(metric).lower()
    if "power" in text:
        return _POWER
    if "busbw" in text:
        return _BUSBW
    return _THROUGHPUT


def _reasons(rows: pd.DataFrame) -> str:
    counts = rows["reason"].fillna("not stated").map(readable_reason).value_counts()
    parts = [f"{r} ({n})" if n > 1 else r for r, n in sorted(counts.items())]
    return "; ".join(parts)


def _sizes(validation: pd.DataFrame, published) -> pd.DataFrame:
    if "size_bytes" in validation.columns or published is None:
        return validation
    sizes = published.collectives.set_index("csv_row")["size_bytes"]
    return validation.assign(size_bytes=validation["csv_row"].map(sizes))


def _warned(measured: pd.DataFrame | None) -> pd.DataFrame | None:
    """Block ``measured, with warnings``: one row per measured row whose ingestion warned
    (``source`` = ``run_id: config_id``, ``rows`` 1, the warnings in ``reason``); None when no
    row warned (the table is then what it was without measured rows)."""
    if measured is None or measured.empty or "warnings" not in measured.columns:
        return None
    warned = measured[measured["warnings"].fillna("").astype(str) != ""]
    if warned.empty:
        return None
    return pd.DataFrame(
        {
            "block": _MEASURED_WARNED,
            "source": [f"{r.run_id}: {r.config_id}" for r in warned.itertuples()],
            "rows": 1,
            "rejected": 0,
            "error": "",
            "reason": warned["warnings"].astype(str).tolist(),
        }
    )


def validation_table(
    validation: pd.DataFrame,
    holdout: pd.DataFrame,
    published=None,
    sim_vs_measured: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Error per source: held out first, then in sample; bus bandwidth; what was not predicted.

    Parameters
    ----------
    validation : pandas.DataFrame
        ``results/validation.parquet`` (``csv_row``, ``status``, ``kind``, ``citation``,
        ``observed``, ``predicted``, ``ape_pct``, ``published_metric``, ``reason``): the shipped
        calibration's predictions of every published row, or its rejection.
    holdout : pandas.DataFrame
        ``results/holdout.parquet`` (:data:`trainscale.published.holdout.HOLDOUT_COLUMNS`): each
        throughput row predicted by a fit without its source.
    published : trainscale.published.measurements.PublishedData, optional
        The normalised published CSV; gives the nccl-tests message sizes (``size_bytes``)
        unless ``validation`` has them.
    sim_vs_measured : pandas.DataFrame, optional
        ``results/sim_vs_measured.parquet`` (:data:`trainscale.schema.SIM_VS_MEASURED_COLUMNS`):
        the measured runs; those whose ingestion warned are listed at the end.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.VALIDATION_TABLE_COLUMNS`, blocks in this order:

        - ``tokens/s per GPU, per source``, ``... per framework``, ``... all sources``:
          ``source`` (citation, framework, or ``all``); ``rows`` held out; ``rejected`` rows of
          that source's throughput the simulator cannot represent (all of them on ``all``);
          ``error`` = ``held out``; ``mape_pct``, ``median_ape_pct``, ``max_ape_pct`` of the
          held-out predictions (%); ``in_sample_mape_pct`` of the shipped calibration;
          ``interval_coverage_pct`` and ``interval_median_width_pct``: the 80 % intervals'
          source-out coverage and median width (%); ``reason`` of the rejected rows;
        - ``nccl-tests bus bandwidth, all sizes`` and ``..., >= 16 MiB``: ``error`` =
          ``in sample`` (every fit uses these rows), errors of GB/s;
        - ``not predicted: <quantity>``: sources of which no row of that quantity (tokens/s
          per GPU, power, bus bandwidth) could be predicted, ``rows`` 0, ``rejected`` and
          ``reason``;
        - ``measured, with warnings``: every measured row (a job of a run under
          ``data/runs``) whose logs gave a warning (``docs/ingest/checks.md``), ``source``
          ``run_id: config_id``, ``rows`` 1 and the warning text in ``reason``, so that a
          measurement kept despite a warning is never compared unseen. The block is absent when
          no row warned (decision: the table keeps its columns, so that a warned run adds rows,
          not a column that is empty for every published source).
    """
    require(validation, ["citation", "status", "kind", "ape_pct"], where="validation_table")
    require(holdout, ["csv_row", "citation", "framework", "ape_pct"], where="validation_table")
    validation = _sizes(validation, published)
    rejected = validation[validation["status"] == "rejected"]
    metric = rejected.get("published_metric", pd.Series(None, index=rejected.index))
    rejected = rejected.assign(quantity=metric.map(_quantity))
    parts = [
        *_throughput_blocks(holdout, rejected, in_sample_throughput(validation)),
        *_busbw_blocks(validation),
        *_not_predicted_blocks(validation, rejected),
    ]
    warned = _warned(sim_vs_measured)
    if warned is not None:
        parts.append(warned)
    if not parts:
        return pd.DataFrame(columns=names(VALIDATION_TABLE_COLUMNS))
    table = pd.concat(parts, ignore_index=True).reindex(columns=names(VALIDATION_TABLE_COLUMNS))
    table["error"] = table["error"].fillna("")
    table["reason"] = table["reason"].fillna("")
    return table.astype({"rows": "int64", "rejected": "int64"})


def _throughput_blocks(
    holdout: pd.DataFrame, rejected: pd.DataFrame, in_sample: pd.DataFrame
) -> list[pd.DataFrame]:
    """Blocks ``tokens/s per GPU, per source``, ``..., per framework`` and ``..., all sources``:
    the held-out errors (%), the shipped calibration's in-sample MAPE, the intervals' coverage
    and the rejected throughput rows of each source; none without held-out rows."""
    if holdout.empty:
        return []
    throughput_rejects = rejected[rejected["quantity"] == _THROUGHPUT]
    by_source = accuracy(holdout, in_sample)
    sources, total = by_source.iloc[:-1].copy(), by_source.iloc[-1:].copy()
    groups = dict(tuple(throughput_rejects.groupby("citation")))
    sources["rejected"] = [len(groups.get(s, ())) for s in sources["source"]]
    sources["reason"] = [_reasons(groups[s]) if s in groups else "" for s in sources["source"]]
    total["rejected"] = len(throughput_rejects)
    total["reason"] = ""
    frameworks = accuracy(holdout, in_sample, by="framework").iloc[:-1]
    frameworks = frameworks.rename(columns={"framework": "source"}).assign(rejected=0)
    _add_coverage(holdout, sources, frameworks, total)
    held_out = {
        "held_out_mape_pct": "mape_pct",
        "held_out_median_ape_pct": "median_ape_pct",
        "held_out_max_ape_pct": "max_ape_pct",
    }
    return [
        frame.rename(columns=held_out).assign(block=f"{_THROUGHPUT}, {block}", error="held out")
        for block, frame in (
            ("per source", sources),
            ("per framework", frameworks),
            ("all sources", total),
        )
    ]


def _busbw_blocks(validation: pd.DataFrame) -> list[pd.DataFrame]:
    """Blocks ``nccl-tests bus bandwidth, all sizes`` and ``..., >= 16 MiB``: in-sample errors
    of the predicted bus bandwidths (GB/s); none without predicted collective rows or sizes."""
    collectives = validation[
        (validation["status"] == "predicted") & (validation["kind"] == "collective")
    ]
    if collectives.empty or "size_bytes" not in collectives.columns:
        return []
    return [
        frame.drop(columns="sizes").assign(
            block=f"{_BUSBW}, {'all sizes' if sizes == 'all' else sizes}",
            error="in sample",
            in_sample_mape_pct=frame["mape_pct"],
            rejected=0,
        )
        for sizes, frame in collective_accuracy(collectives).groupby("sizes", sort=False)
    ]


def _not_predicted_blocks(validation: pd.DataFrame, rejected: pd.DataFrame) -> list[pd.DataFrame]:
    """Blocks ``not predicted: <quantity>``: the sources of which no row of that quantity was
    predicted, with their rejected rows and the reasons."""
    predicted = validation[validation["status"] == "predicted"]
    kinds = predicted["kind"]
    have = {
        _THROUGHPUT: set(predicted.loc[kinds == "throughput", "citation"]),
        _BUSBW: set(predicted.loc[kinds == "collective", "citation"]),
        _POWER: set(),
    }
    blocks = []
    for quantity in (_THROUGHPUT, _POWER, _BUSBW):
        mine = rejected[(rejected["quantity"] == quantity)]
        mine = mine[~mine["citation"].isin(have[quantity])]
        if mine.empty:
            continue
        rows = [
            {"source": s, "rows": 0, "rejected": len(g), "reason": _reasons(g)}
            for s, g in mine.groupby("citation", sort=True)
        ]
        blocks.append(pd.DataFrame(rows).assign(block=f"not predicted: {quantity}"))
    return blocks


def _add_coverage(
    holdout: pd.DataFrame, sources: pd.DataFrame, frameworks: pd.DataFrame, total: pd.DataFrame
) -> None:
    """Source-out interval coverage and median width (%) beside each held-out row."""
    from trainscale.sim.intervals import source_out_coverage

    needed = ("gpu", "num_gpus", "observed_tokens_per_s_per_gpu", "predicted_tokens_per_s_per_gpu")
    if any(c not in holdout.columns for c in needed):
        return
    rows = source_out_coverage(holdout)

    def fill(frame: pd.DataFrame, by: str | None) -> None:
        groups = dict(tuple(rows.groupby(by))) if by else {"all": rows}
        keys = frame["source"] if by else ["all"] * len(frame)
        frame["interval_coverage_pct"] = [
            100.0 * groups[k]["covered"].mean() if k in groups else float("nan") for k in keys
        ]
        frame["interval_median_width_pct"] = [
            groups[k]["width_pct"].median() if k in groups else float("nan") for k in keys
        ]

    fill(sources, "citation")
    fill(frameworks, "framework")
    fill(total, None)


def render(
    stem: str | os.PathLike[str],
    validation: pd.DataFrame,
    holdout: pd.DataFrame,
    published=None,
    sim_vs_measured: pd.DataFrame | None = None,
) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    table = validation_table(validation, holdout, published, sim_vs_measured)
    ids = pd.concat(
        [validation.get("calibration_id", pd.Series()), holdout.get("calibration_id", pd.Series())]
    )
    calibration = ", ".join(sorted(ids.dropna().astype(str).unique()))
    return write_table(
        table,
        stem,
        label="tab:validation",
        caption="Simulated against published measurements (data/published/measurements.csv), "
        "absolute percentage error. Held out: each source predicted by a fit to all the other "
        "sources, the error a user gets on a run the model has never seen; in sample: the "
        "shipped calibration"
        + (f" ({calibration})" if calibration else "")
        + ", fitted on every source. Interval coverage: share of a source's rows inside the 80 % "
        "prediction interval computed without that source (split conformal); width: (hi - lo) "
        "/ predicted. Bus bandwidths are in sample (every fit uses them); "
        "below 16 MiB they are read from plots to about 5 GB/s.",
        float_format={
            "mape_pct": ".1f",
            "median_ape_pct": ".1f",
            "max_ape_pct": ".1f",
            "in_sample_mape_pct": ".1f",
            "interval_coverage_pct": ".1f",
            "interval_median_width_pct": ".1f",
        },
    )
