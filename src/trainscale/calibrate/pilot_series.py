"""Pilot validation on published scaling series: how well one pilot GPU count predicts the rest.

A **scaling series** is a set of published throughput rows with the same :data:`SERIES_COLUMNS`
(source, software stack, GPU, model, sequence length, precision, recomputation and layout: tp, pp,
cp, vpp, sharding) at **two or more** GPU counts (global and micro batch may change with the
count, as in a weak-scaling study). For every series (:func:`pilot_errors`):

1. the **base** is the calibration fitted without the series' source (:func:`base_without`:
   every other throughput source and every nccl-tests row, as
   :func:`trainscale.calibrate.fit.held_out_predictions` fits; one fit per source, cached);
2. the **pilots** are the series' rows at its smallest GPU count; the base is refitted on them by
   the pilot rule (:func:`trainscale.calibrate.pilot.refit_pilots`; one GPU count, so the level);
3. every larger row is predicted by the pilot-calibrated calibration, by the base, and by "the
   pilots' tokens/s per GPU holds" (perfect weak scaling: the mean measured tokens/s per GPU of
   the pilots).

:func:`pilot_interval_model` fits the interval table of :mod:`trainscale.sim.pilot_intervals` on
those rows; :func:`source_out_coverage` checks each source's rows against a table fitted without
that source; :data:`PILOT_TABLE_COLUMNS` are the columns of ``results/pilots.parquet`` (rule
``published_pilots``), summarised by :func:`trainscale.tables.pilots.summary` for ``trainscale
validate --pilots`` and the ``pilots`` table.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.calibrate.pilot import MEASURED, refit_pilots
from trainscale.schema import PILOT_ERROR_COLUMNS, PILOT_TABLE_COLUMNS, names
from trainscale.sim.interval_scale import growth_factor, growth_rate
from trainscale.sim.pilot_intervals import (
    PilotIntervals,
    distance,
    fit_pilot_quantiles,
    with_shipped,
)

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = [
    "PILOT_COLUMNS",
    "PILOT_TABLE_COLUMNS",
    "SERIES_COLUMNS",
    "base_without",
    "fit_scaled_quantiles",
    "pilot_errors",
    "pilot_interval_model",
    "pilot_table",
    "scaling_series",
    "source_out_coverage",
]

SERIES_COLUMNS = (
    "citation", "framework", "gpu", "model_name", "seq_len", "precision", "recompute",
    "tp", "pp", "cp", "vpp", "sharding",
)  # fmt: skip
#: The columns of :func:`pilot_errors` (their dtypes, units and meanings:
#: :data:`trainscale.schema.PILOT_ERROR_COLUMNS`).
PILOT_COLUMNS: tuple[str, ...] = tuple(names(PILOT_ERROR_COLUMNS))


def pilot_table(
    errors: pd.DataFrame, *, calibration_id: str, simulator_version: str
) -> pd.DataFrame:
    """``errors`` (:func:`pilot_errors`) with ``covered`` (:func:`source_out_coverage`) and the
    provenance: the rows of ``results/pilots.parquet`` (:data:`PILOT_TABLE_COLUMNS`)."""
    return errors.assign(
        covered=source_out_coverage(errors), calibration_id=calibration_id,
        simulator_version=simulator_version,
    )  # fmt: skip


def scaling_series(throughput: pd.DataFrame) -> pd.Series:
    """Per row, the name of its scaling series (``citation | model | gpu | tp/pp/cp/vpp |
    sharding | ...`` joined from :data:`SERIES_COLUMNS`), or NaN when the row's group has one GPU
    count only."""
    keys = throughput[list(SERIES_COLUMNS)].astype(object).where(
        throughput[list(SERIES_COLUMNS)].notna(), ""
    ).astype(str)  # fmt: skip
    name = keys.agg(" | ".join, axis=1)
    counts = throughput.groupby(name)["num_gpus"].transform("nunique")
    return name.where(counts >= 2)


def base_without(
    published: PublishedData, citation: str, *, catalogue: Catalogue, shipped: Calibration
) -> Calibration:
    """The calibration fitted without ``citation``'s throughput rows (as
    :func:`trainscale.calibrate.fit.held_out_predictions` fits), rounded as ``trainscale
    calibrate`` rounds; ``shipped`` gives the power parameter and the intervals."""
    from trainscale.calibrate.fit import fit_throughput, round_calibration
    from trainscale.published.measurements import PublishedData

    rows = published.throughput
    keep = (rows["citation"] != citation).to_numpy()
    others = PublishedData(
        throughput=rows[keep].reset_index(drop=True), collectives=published.collectives,
        rejects=published.rejects,
    )  # fmt: skip
    fitted = round_calibration(fit_throughput(others, catalogue=catalogue).calibration)
    return replace(fitted, power_comm_frac=shipped.power_comm_frac, intervals=shipped.intervals)


def _predict(rows: pd.DataFrame, calibration: Calibration, catalogue: Catalogue) -> np.ndarray:
    return _predicted(rows, calibration, catalogue)["tokens_per_s_per_gpu"].to_numpy(np.float64)


def _predicted(rows: pd.DataFrame, calibration: Calibration, catalogue: Catalogue) -> pd.DataFrame:
    from trainscale.published.accuracy import throughput_predictions
    from trainscale.published.measurements import PublishedData

    data = PublishedData(
        throughput=rows.reset_index(drop=True), collectives=pd.DataFrame(),
        rejects=pd.DataFrame(columns=["csv_row"]),
    )  # fmt: skip
    out, rejects = throughput_predictions(data, calibration, catalogue)
    if len(rejects):
        raise ValueError(f"pilot validation: {len(rejects)} published row(s) not predictable")
    return out


def pilot_errors(
    published: PublishedData,
    *,
    catalogue: Catalogue,
    shipped: Calibration,
    bases: dict[str, Calibration] | None = None,
    calibrated: dict[str, Calibration] | None = None,
) -> pd.DataFrame:
    """One row per larger-scale row of every scaling series (:data:`PILOT_COLUMNS`), the
    procedure of the module docstring. ``shipped``: power parameter and intervals of the bases
    (``trainscale`` passes the shipped calibration). ``bases``: per citation, the base fitted
    without it (computed and stored in the dict when missing: pass one dict to reuse the fits).
    ``calibrated``: a dict that receives, per series name, its pilot-calibrated calibration.
    Sorted by series then ``csv_row``; deterministic."""
    from trainscale.published.accuracy import throughput_predictions

    bases = {} if bases is None else bases
    usable, _ = throughput_predictions(published, shipped, catalogue)
    rows = published.throughput[published.throughput["csv_row"].isin(usable["csv_row"])]
    rows = rows.assign(series=scaling_series(rows)).dropna(subset=["series"])
    parts = []
    for name, series in rows.groupby("series", sort=True):
        citation = str(series["citation"].iloc[0])
        if citation not in bases:
            bases[citation] = base_without(
                published, citation, catalogue=catalogue, shipped=shipped
            )
        base = bases[citation]
        smallest = int(series["num_gpus"].min())
        pilots = series[series["num_gpus"] == smallest]
        targets = series[series["num_gpus"] > smallest].sort_values("csv_row", kind="mergesort")
        table = pilots.rename(columns={"observed_tokens_per_s_per_gpu": MEASURED})
        pilot_calibration, _ = refit_pilots(table, base=base, catalogue=catalogue)
        if calibrated is not None:
            calibrated[str(name)] = pilot_calibration
        observed = targets["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        at_base = _predicted(targets, base, catalogue)
        predicted = {
            "pilot": _predict(targets, pilot_calibration, catalogue),
            "base": at_base["tokens_per_s_per_gpu"].to_numpy(np.float64),
            "weak_scaling": np.full(len(targets), float(table[MEASURED].mean())),
        }
        part = pd.DataFrame(
            {
                "series": name, "citation": citation, "csv_row": targets["csv_row"].to_numpy(),
                "framework": targets["framework"].to_numpy(),
                "model_name": targets["model_name"].to_numpy(), "gpu": targets["gpu"].to_numpy(),
                "num_gpus": targets["num_gpus"].to_numpy(np.int64), "pilot_gpus": smallest,
                "log2_distance": distance(targets["num_gpus"].to_numpy(), np.array([smallest])),
                "observed_tokens_per_s_per_gpu": observed,
                "pilot_predicted_tokens_per_s_per_gpu": predicted["pilot"],
                "base_predicted_tokens_per_s_per_gpu": predicted["base"],
                "weak_scaling_tokens_per_s_per_gpu": predicted["weak_scaling"],
            }
        )  # fmt: skip
        for kind, values in predicted.items():
            part[f"{kind}_ape_pct"] = 100.0 * np.abs(values - observed) / observed
        for side, end in (("lower", "lo"), ("upper", "hi")):  # the bases carry the shipped
            bound = at_base[f"tokens_per_s_per_gpu_{end}"].to_numpy(np.float64)  # intervals
            part[f"shipped_{side}_log_factor"] = np.log(bound / predicted["base"])
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[list(PILOT_COLUMNS)]


def _log_error(errors: pd.DataFrame) -> np.ndarray:
    return np.log(
        errors["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        / errors["pilot_predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
    )


def pilot_interval_model(
    errors: pd.DataFrame, pilot_gpus: pd.Series | np.ndarray, *, coverage: bool = False
) -> PilotIntervals:
    """The :class:`~trainscale.sim.pilot_intervals.PilotIntervals` fitted on ``errors``
    (:func:`pilot_errors`) for pilots at ``pilot_gpus`` (any repeats; sorted and made distinct
    here). ``coverage``: also measure and store the source-out coverage (:func:`summary` of
    :func:`source_out_coverage`, overall)."""
    from trainscale.calibrate.pilot_reach import capped_bins, reach, reach_evidence

    lower, upper, rows, largest, rate = fit_scaled_quantiles(errors)
    evidence = reach_evidence(errors)
    stored = None
    if coverage:
        covered = source_out_coverage(errors)
        stored = {"rows": len(covered), "covered_pct": round(100.0 * float(covered.mean()), 2)}
    return PilotIntervals(
        pilot_gpus=tuple(sorted({int(g) for g in np.asarray(pilot_gpus)})),
        lower=lower, upper=upper, rows=rows, max_distance=largest, coverage=stored,
        reach=reach(evidence), capped=capped_bins(evidence), growth_rate=rate,
    )  # fmt: skip


def fit_scaled_quantiles(
    errors: pd.DataFrame,
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...], float, float]:
    """:func:`~trainscale.sim.pilot_intervals.fit_pilot_quantiles` of ``errors``' log errors
    divided by their absolute-scale growth factor, and the growth rate fitted on them
    (:func:`~trainscale.sim.interval_scale.growth_rate`)."""
    gpus = errors["num_gpus"].to_numpy(np.float64)
    log_error, source = _log_error(errors), errors["citation"].to_numpy()
    rate = growth_rate(gpus, log_error, source)
    scaled = log_error / growth_factor(gpus, rate)
    return (*fit_pilot_quantiles(errors["log2_distance"].to_numpy(), scaled, source), rate)


def source_out_coverage(errors: pd.DataFrame) -> pd.Series:
    """Per row of ``errors``, whether its observed value lies in the 80 % interval a user
    calibration on its series' pilots would give, every part of it fitted on the *other*
    sources' rows: within their reach (:mod:`trainscale.calibrate.pilot_reach`) the pilot
    interval around the pilot-calibrated prediction, set against the shipped interval as their
    evidence says (:func:`~trainscale.sim.pilot_intervals.with_shipped`); beyond it the shipped
    interval around the shipped level (the base)."""
    from trainscale.calibrate.pilot_reach import capped_bins, reach, reach_evidence

    covered = np.zeros(len(errors), dtype=bool)
    log_error = _log_error(errors)
    base_error = np.log(
        errors["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        / errors["base_predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
    )
    shipped_lo = errors["shipped_lower_log_factor"].to_numpy(np.float64)
    shipped_hi = errors["shipped_upper_log_factor"].to_numpy(np.float64)
    for citation in sorted(errors["citation"].unique()):
        mine = (errors["citation"] == citation).to_numpy()
        others = errors[~mine]
        lower, upper, rows, largest, rate = fit_scaled_quantiles(others)
        evidence = reach_evidence(others)
        model = PilotIntervals(
            (1,), lower, upper, rows, largest, reach=reach(evidence), capped=capped_bins(evidence),
            growth_rate=rate,
        )  # fmt: skip
        # distance is measured from each row's own pilots: reach and cap at 2**d GPUs from 1
        # pilot GPU; the factors at the row's distance and its own GPU count
        gpus = np.exp2(errors["log2_distance"].to_numpy()[mine])
        lo, hi = model.log_factors_at(
            errors["log2_distance"].to_numpy()[mine], errors["num_gpus"].to_numpy()[mine]
        )
        lo, hi = with_shipped(lo, hi, shipped_lo[mine], shipped_hi[mine], model.capped_at(gpus))
        inside = (log_error[mine] >= lo) & (log_error[mine] <= hi)
        shipped = (base_error[mine] >= shipped_lo[mine]) & (base_error[mine] <= shipped_hi[mine])
        covered[mine] = np.where(model.beyond_reach(gpus), shipped, inside)
    return pd.Series(covered, index=errors.index, name="covered")
