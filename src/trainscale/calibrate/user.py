"""Calibration on a user's own cluster: ``trainscale calibrate --measurements FILE -o mine.yaml``.

What a cluster changes is refitted; everything else keeps the shipped value:

- the per-framework log offsets (:data:`trainscale.sim.calibration.OFFSET_BASES`) of the frameworks
  present in the measurements (the FP8-GEMM offset only when some row runs fp8);
- ``nic_efficiency``, ``nvlink_efficiency``, ``congestion_per_doubling``, ``straggler_cv``
  (:data:`CLUSTER_PARAMETERS`).

A parameter no measured row responds to (moving it by a tenth of its bound range changes no
prediction by 0.1 %, e.g. the NIC efficiency when every run fits in one node) is not refitted and
keeps the shipped value. The fit is :func:`trainscale.calibrate.fit.fit_throughput` on the
measurements alone (one source), with the shipped calibration as the start and as the centre of
every prior, every other throughput parameter pinned at its shipped value. The priors' widths are
the shipped ones times ``sqrt(N / n)`` (:func:`prior_scale`; ``N`` the published rows of the
shipped fit, ``n`` the user's): the prior weighs against ``n`` rows as it weighed against ``N``.
This scaling was chosen after the first version (the shipped widths unchanged) was seen to leave
every offset within 0.02 of the base on the worked example's 6-7 rows (README).

The measurements: a CSV or Parquet table with the configuration columns of ``trainscale
predict`` plus ``measured_tokens_per_s_per_gpu`` (a table written by ``trainscale ingest`` is
read as is: its rows have ``source`` = ``measured`` and their ``tokens_per_s_per_gpu`` is the
measurement). Refused, with a one-line error naming the file and rows: missing columns, fewer
rows than refitted parameters, measurements that are not positive numbers, configurations the
simulator cannot represent.

The written file has the format of ``data/calibration.yaml``, its own ``calibration_id``, the
measurements' provenance (file, sha256 of its bytes, rows used) and an ``intervals`` block: the
shipped calibration's conformal quantiles (errors on *published sources left out of the fit*;
a handful of a user's runs cannot calibrate an 80 % quantile on their own), with the coverage
facts extended by the user's rows (their framework rows, GPU counts and GPUs count as calibrated
data). The same measurements give the same file byte for byte.

The base calibration, the published measurements (whose row count sets the prior widths) and the
catalogue the fit simulates with are the caller's (``trainscale calibrate`` passes the shipped
ones).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError, row_numbering
from trainscale.schema import FRAMEWORKS
from trainscale.sim.calibration import (
    OFFSET_BASES,
    PARAMETERS,
    Calibration,
    dump_calibration,
    load_calibration,
)
from trainscale.sim.intervals import CoverageFacts, PredictionIntervals

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.catalogue import Catalogue

__all__ = [
    "CLUSTER_PARAMETERS",
    "MEASURED",
    "UserCalibration",
    "calibrate_user",
    "read_measurements",
    "refitted_parameters",
]

MEASURED = "measured_tokens_per_s_per_gpu"
CLUSTER_PARAMETERS = (
    "nic_efficiency", "nvlink_efficiency", "congestion_per_doubling", "straggler_cv",
)  # fmt: skip
#: A parameter is refitted only if moving it by this share of its bound range changes some
#: measured row's prediction by more than :data:`_SENSITIVITY` (log).
_STEP = 0.1
_SENSITIVITY = 1e-3
_SPECS = {p.name: p for p in PARAMETERS}


def _rows(index: object) -> str:
    from trainscale.calibrate.fit import _ranges

    return _ranges(int(i) for i in index)  # type: ignore[union-attr]


def read_measurements(path: Path) -> pd.DataFrame:
    """The measurement table, checked: columns, numbers, measured values (rows 0-based, as
    every trainscale message counts them: :func:`~trainscale.errors.row_numbering`)."""
    from trainscale.io.tables import read_table
    from trainscale.sim.inputs import (
        REQUIRED_COLUMNS,
        SHAPE_COLUMNS,
        check_table,
        missing_configuration_columns,
    )

    table = read_table(path)
    if (
        MEASURED not in table.columns
        and "tokens_per_s_per_gpu" in table.columns
        and ("source" in table.columns and (table["source"] == "measured").all())
    ):
        table = table.rename(columns={"tokens_per_s_per_gpu": MEASURED})
    missing = missing_configuration_columns(table, also=(MEASURED,))
    if missing:
        raise InputFileError(
            path,
            f"missing column(s) {', '.join(missing)}; a measurement table needs {MEASURED} "
            f"(tokens/s per GPU), {', '.join(REQUIRED_COLUMNS)} and either 'model' or all of "
            f"{', '.join(SHAPE_COLUMNS)}; optional: any other configuration column of trainscale "
            "predict (framework, cp, vpp, system, gpus_per_node, nic_gbit_per_s_per_gpu, ...)",
        )
    table = check_table(table, str(path)).reset_index(drop=True)
    measured = pd.to_numeric(table[MEASURED], errors="coerce").to_numpy(np.float64)
    bad = ~(np.isfinite(measured) & (measured > 0))
    if bad.any():
        raise InputFileError(
            path,
            f"{MEASURED} is not a positive number in row(s) {_rows(np.flatnonzero(bad))}"
            f"{row_numbering(str(path))}",
        )
    table[MEASURED] = measured
    return table


def refitted_parameters(table: pd.DataFrame) -> tuple[str, ...]:
    """The parameters a cluster changes that these measurements hold (before the sensitivity
    check): the offsets of the frameworks present (fp8 only with fp8 rows), then
    :data:`CLUSTER_PARAMETERS`."""
    frameworks = (
        table["framework"].fillna("pytorch").astype(str).str.lower()
        if "framework" in table.columns
        else pd.Series(["pytorch"] * len(table))
    )
    fp8 = bool((table["precision"].astype(str) == "fp8").any())
    names = [
        f"{base}_offset_{fw}"
        for fw in FRAMEWORKS
        if (frameworks == fw).any()
        for base in OFFSET_BASES
        if base != "fp8_gemm" or fp8
    ]
    return (*names, *CLUSTER_PARAMETERS)


def _sensitive(
    table: pd.DataFrame, base: Calibration, names: tuple[str, ...], catalogue: Catalogue
) -> list[str]:
    from trainscale.sim.configs import build_configs
    from trainscale.sim.simulate import predict_arrays

    configs, _, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    reference = np.log(predict_arrays(configs, base, catalogue)["tokens_per_s_per_gpu"])
    kept = []
    for name in names:
        spec = _SPECS[name]
        value = getattr(base, name)
        step = _STEP * (spec.upper - spec.lower)
        moved = value + step if value + step <= spec.upper else value - step
        changed = np.log(
            predict_arrays(configs, replace(base, **{name: moved}), catalogue)[
                "tokens_per_s_per_gpu"
            ]
        )
        if np.max(np.abs(changed - reference)) > _SENSITIVITY:
            kept.append(name)
    return kept


def prior_scale(rows: int, published: PublishedData) -> float:
    """``sqrt(N / rows)``: the priors' widths for a fit on ``rows`` measurements, ``N`` the rows
    the shipped fit weighs (the throughput and nccl-tests rows of ``published``, the published
    measurements). The shipped priors were set against the total weight of ``N`` rows (mean row
    weight 1); with the same widths a user's handful of rows could not move a framework offset by
    more than about 0.02. Scaled so, the prior weighs against the user's rows as it weighs
    against the published ones."""
    reference = len(published.throughput) + len(published.collectives)
    return float(np.sqrt(reference / max(rows, 1)))


class UserCalibration:
    """The result of :func:`calibrate_user`: the calibration, its rows and what was refitted."""

    def __init__(self, calibration: Calibration, rows: pd.DataFrame, refitted: list[str],
                 fixed: list[str]) -> None:  # fmt: skip
        self.calibration = calibration
        self.rows = rows
        self.refitted = refitted
        self.not_refitted = fixed


def _represent(path: Path, table: pd.DataFrame, catalogue: Catalogue) -> None:
    from trainscale.sim.configs import build_configs

    _, _, rejects = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, origin=str(path), skip_invalid=True,
    )  # fmt: skip
    if len(rejects):
        reasons = "; ".join(
            f"row {int(r.row)} ({r.column}): {r.reason}" for r in rejects.itertuples()
        )
        raise InputFileError(
            path, f"the simulator cannot represent row(s) {_rows(rejects['row'].unique())}"
            f"{row_numbering(str(path))}: {reasons}"
        )  # fmt: skip


def calibrate_user(
    measurements: Path,
    output: Path | None = None,
    *,
    base: Calibration,
    published: PublishedData,
    catalogue: Catalogue,
    table: pd.DataFrame | None = None,
) -> UserCalibration:
    """Refit what a cluster changes on ``measurements`` and write ``output`` (if given).

    ``base``: the calibration to start from and centre the priors on (``trainscale calibrate``
    passes the shipped ``data/calibration.yaml``). ``published``: the published measurements
    the base was fitted on (their row count sets the prior widths, :func:`prior_scale`).
    ``catalogue``: what the fit simulates with. ``table``: the measurements already read (else
    read from ``measurements``, which is also hashed for the provenance).
    """
    from trainscale.calibrate.fit import _ranges, _round, fit_throughput
    from trainscale.published.measurements import PublishedData

    path = Path(measurements)
    table = read_measurements(path) if table is None else table.reset_index(drop=True)
    _represent(path, table, catalogue)
    candidates = refitted_parameters(table)
    refit = _sensitive(table, base, candidates, catalogue)
    if len(table) < len(refit):
        raise InputFileError(
            path,
            f"{len(table)} row(s), fewer than the {len(refit)} parameters it would refit "
            f"({', '.join(refit)}); give at least {len(refit)} measured configurations",
        )
    fitted_names = {p.name for p in PARAMETERS if p.fitted and p.group == "throughput"}
    pinned = {name: getattr(base, name) for name in fitted_names if name not in refit}
    rows = table.assign(
        observed_tokens_per_s_per_gpu=table[MEASURED], citation=str(path),
        csv_row=np.arange(1, len(table) + 1),
    )  # fmt: skip
    data = PublishedData(
        throughput=rows, collectives=pd.DataFrame(), rejects=pd.DataFrame(columns=["csv_row"])
    )
    scale = prior_scale(len(table), published)
    fit = fit_throughput(
        data, start=base, catalogue=catalogue, pinned=pinned, prior_centre=base,
        prior_scale=scale,
    )  # fmt: skip
    final = _round(fit.calibration)
    from trainscale.published.accuracy import throughput_predictions

    before, _ = throughput_predictions(data, base, catalogue)
    after, _ = throughput_predictions(data, final, catalogue)
    intervals = _user_intervals(base.intervals, after)
    final = replace(final, intervals=intervals)
    if intervals is not None:
        after, _ = throughput_predictions(data, final, catalogue)
    if output is not None:
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        covered = (after["observed_tokens_per_s_per_gpu"] >= after["tokens_per_s_per_gpu_lo"]) & (
            after["observed_tokens_per_s_per_gpu"] <= after["tokens_per_s_per_gpu_hi"]
        )
        provenance = {
            "method": "user calibration (trainscale.calibrate.user): fit_throughput on the "
            "measurements alone, starting from and with every prior centred on the base "
            "calibration, refitting only the per-framework offsets of the frameworks present "
            "and nic_efficiency, nvlink_efficiency, congestion_per_doubling, straggler_cv "
            "(those the rows respond to), prior widths x sqrt(N published rows / n measured "
            f"rows) = x{scale:.4g}; every other parameter keeps the base value",
            "command": f"trainscale calibrate --measurements {path}",
            "base_calibration_id": base.calibration_id,
            "measurements": {
                "file": str(path),
                "sha256": digest,
                "rows": len(table),
                "rows_used": _ranges(rows["csv_row"]),
            },
            "refitted": list(refit),
            "not_refitted_no_row_responds": [n for n in candidates if n not in refit],
            "residual_error": {
                "base_mape_pct": round(float(before["ape_pct"].mean()), 2),
                "fitted_mape_pct": round(float(after["ape_pct"].mean()), 2),
                "in_sample_interval_coverage_pct": round(100.0 * float(covered.mean()), 2)
                if intervals is not None
                else None,
            },
        }
        dump_calibration(final, output, provenance)
    return UserCalibration(final, after, list(refit), [n for n in candidates if n not in refit])


def _user_intervals(
    shipped: PredictionIntervals | None, rows: pd.DataFrame
) -> PredictionIntervals | None:
    if shipped is None:
        return None
    return PredictionIntervals(
        level=shipped.level,
        pooled_quantile=shipped.pooled_quantile,
        quantiles=shipped.quantiles,
        facts=shipped.facts.merged(CoverageFacts.of(rows)),
        coverage=None,
        note="user calibration: the base calibration's conformal quantiles (errors on published "
        "sources left out of the fit), coverage facts extended by the measured rows; not "
        "recalibrated on them (a few runs cannot calibrate an 80 % quantile), so their coverage "
        "on this cluster is not measured",
    )


def worked_example(
    citation: str,
    *,
    published: PublishedData,
    shipped: Calibration,
    catalogue: Catalogue,
    max_gpus: int = 64,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """A published source as a user's unseen cluster: calibrate on its runs at ``max_gpus`` or
    fewer, predict its larger runs.

    The base is the calibration fitted *without* that source (every other throughput source and
    every nccl-tests row; power and intervals as shipped), as a user's cluster the published data
    never saw. Returns the larger rows (``num_gpus``, observed, the base's and the user
    calibration's prediction and error, the user calibration's interval) and a summary:
    ``rows_fitted``, ``rows_predicted``, ``base_mape_pct``, ``user_mape_pct``, ``covered_pct``.
    ``published``: the published measurements; ``shipped``: the shipped calibration (its power
    parameter and intervals); ``catalogue``: what every fit simulates with.
    """
    from trainscale.calibrate.fit import _round, fit_throughput
    from trainscale.published.accuracy import throughput_predictions
    from trainscale.published.measurements import PublishedData

    data = published
    rows = data.throughput
    mine = (rows["citation"] == citation).to_numpy()
    if not mine.any():
        raise InputFileError("data/published/measurements.csv", f"no source {citation!r}")
    others = PublishedData(
        throughput=rows[~mine].reset_index(drop=True), collectives=data.collectives,
        rejects=data.rejects,
    )  # fmt: skip
    base = replace(
        _round(fit_throughput(others, catalogue=catalogue).calibration),
        power_comm_frac=shipped.power_comm_frac,
        intervals=shipped.intervals,
    )  # fmt: skip
    source = rows[mine].reset_index(drop=True)
    small = source[source["num_gpus"] <= max_gpus].rename(
        columns={"observed_tokens_per_s_per_gpu": MEASURED}
    )
    large = PublishedData(
        throughput=source[source["num_gpus"] > max_gpus].reset_index(drop=True),
        collectives=data.collectives.iloc[0:0], rejects=data.rejects,
    )  # fmt: skip
    user = calibrate_user(
        Path(f"{citation} (<= {max_gpus} GPUs)"), base=base, published=published,
        catalogue=catalogue, table=small,
    )  # fmt: skip
    before, _ = throughput_predictions(large, base, catalogue)
    after, _ = throughput_predictions(large, user.calibration, catalogue)
    table = pd.DataFrame(
        {
            "csv_row": after["csv_row"], "model_name": after["model_name"],
            "num_gpus": after["num_gpus"], "observed": after["observed_tokens_per_s_per_gpu"],
            "base_predicted": before["tokens_per_s_per_gpu"],
            "base_error_pct": before["error_pct"],
            "user_predicted": after["tokens_per_s_per_gpu"], "user_error_pct": after["error_pct"],
            "user_lo": after["tokens_per_s_per_gpu_lo"],
            "user_hi": after["tokens_per_s_per_gpu_hi"],
        }
    )  # fmt: skip
    covered = (table["observed"] >= table["user_lo"]) & (table["observed"] <= table["user_hi"])
    summary = {
        "rows_fitted": float(len(small)),
        "rows_predicted": float(len(table)),
        "base_mape_pct": float(before["ape_pct"].mean()),
        "user_mape_pct": float(after["ape_pct"].mean()),
        "covered_pct": float(100.0 * covered.mean()),
    }
    return table, summary


if __name__ == "__main__":  # the README's worked example: python -m trainscale.calibrate.user
    import sys

    from trainscale.published.measurements import load_published
    from trainscale.sim.catalogue import load_catalogue

    shipped_catalogue = load_catalogue()  # the shipped catalogues and data, loaded once here
    shipped_published = load_published(
        hardware=shipped_catalogue.hardware, models=shipped_catalogue.models
    )
    for name in sys.argv[1:] or ["Shoeybi et al. 2019, Megatron-LM (v1)"]:
        rows, numbers = worked_example(
            name, published=shipped_published, shipped=load_calibration(),
            catalogue=shipped_catalogue,
        )  # fmt: skip
        with pd.option_context("display.width", 200, "display.max_columns", None):
            print(name)
            print(rows.round(2).to_string(index=False))
            print({k: round(v, 2) for k, v in numbers.items()})
