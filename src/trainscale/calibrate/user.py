"""Calibration on a user's own cluster: ``trainscale calibrate --measurements FILE -o mine.yaml``.

One measured row or hundreds. What the rows identify is refitted, in order of evidence, and
nothing else (the rule, with its noise margin and prior strength, is in
:mod:`trainscale.calibrate.pilot`):

- one row or more pins the **level**: the GEMM-efficiency log offset of each framework present
  (the stack's compute efficiency on that GPU);
- rows at two or more node counts add the **network** terms (``nic_efficiency``,
  ``congestion_per_doubling``, ``straggler_cv``, ``nvlink_efficiency``);
- rows in two or more layouts (``tp, pp, cp, vpp, sharding``) add the **layout** offsets
  (attention, elementwise traffic, overlap slowdown; FP8 GEMM with fp8 rows).

Which of these nested candidates is kept is decided by predicting the largest measured GPU count
from the smaller ones (leave-largest-scale-out) and keeping the simplest within noise of the best;
every refitted value is shrunk toward the base (shipped) value. A parameter no row responds to is
never changed.

The measurements: one or several paths, each a CSV or Parquet table with the configuration
columns of ``trainscale predict`` plus ``measured_tokens_per_s_per_gpu``, a Parquet file written
by ``trainscale ingest``, a run folder (ingested on the fly) or a folder of these; read and
checked by :mod:`trainscale.calibrate.measurements` (header-only tables, impossible MFU,
conflicting duplicates ... each an error naming the file, row and column).
:func:`read_measurements` is importable from here as before.

The written file has the format of ``data/calibration.yaml``, its own ``calibration_id``, the
measurements' provenance (file(s), sha256 of their bytes, rows used), the ladder with each
candidate's leave-largest-scale-out error, and an ``intervals`` block: the shipped calibration's
conformal quantiles with the coverage facts extended by the user's rows, plus a ``pilot`` block
(:mod:`trainscale.sim.pilot_intervals`) that replaces them for this calibration's predictions: the
80 % interval as a function of the distance (log2 GPU ratio) from the measured GPU counts,
measured on how wrong pilot-calibrated predictions were on published scaling series
(:mod:`trainscale.calibrate.pilot_series`, every series' base fitted without its source). The
same measurements give the same file byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.calibrate.measurements import (
    MEASURED,
    Measurements,
    RunIngester,
    digest,
    read_measurements,
    refitted_on_bounds,
)
from trainscale.calibrate.user_power import (
    UserPowerFit,
    has_measured_power,
    measured_power,
    refit_user_power,
    user_power_block,
)
from trainscale.errors import InputFileError
from trainscale.sim.calibration import (
    Calibration,
    dump_calibration,
)
from trainscale.sim.intervals import PredictionIntervals
from trainscale.sim.support_facts import CoverageFacts

if TYPE_CHECKING:
    from trainscale.calibrate.pilot import PilotReport
    from trainscale.calibrate.stored import StoredPilotErrors
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.catalogue import Catalogue
    from trainscale.sim.energy import PowerTerms
    from trainscale.sim.pilot_intervals import PilotIntervals

__all__ = [
    "MEASURED",
    "UserCalibration",
    "calibrate_user",
    "read_measurements",
]


class UserCalibration:
    """The result of :func:`calibrate_user`: the calibration, its rows, what was refitted, the
    :class:`~trainscale.calibrate.pilot.PilotReport`, the refitted parameters left on a bound
    (:func:`~trainscale.calibrate.measurements.refitted_on_bounds`) and the
    :class:`~trainscale.calibrate.measurements.Measurements` read (None when given a table) and
    ``notes`` for the user (the pilot errors measured afresh:
    :func:`~trainscale.calibrate.stored.pilot_model`)."""

    def __init__(self, calibration: Calibration, rows: pd.DataFrame, refitted: list[str],
                 fixed: list[str], report: PilotReport, *, on_bounds: list[str] | None = None,
                 measurements: Measurements | None = None,
                 power: UserPowerFit | None = None,
                 notes: list[str] | None = None) -> None:  # fmt: skip
        self.calibration = calibration
        self.power = power
        """The power refit (:mod:`trainscale.calibrate.user_power`); None without measured
        power."""
        self.rows = rows
        self.refitted = refitted
        self.not_refitted = fixed
        self.report = report
        self.on_bounds = [] if on_bounds is None else on_bounds
        self.measurements = measurements
        self.notes = [] if notes is None else notes


def calibrate_user(
    measurements: Path | Sequence[Path],
    output: Path | None = None,
    *,
    base: Calibration,
    published: PublishedData | Callable[[], PublishedData] | None,
    catalogue: Catalogue,
    table: pd.DataFrame | None = None,
    pilot_errors: pd.DataFrame | None = None,
    stored: StoredPilotErrors | None = None,
    ingest: RunIngester | None = None,
    base_terms: PowerTerms | None = None,
    node_power_log: Callable[[Path], float] | None = None,
) -> UserCalibration:
    """Refit what the measured rows identify (:mod:`trainscale.calibrate.pilot`) and write
    ``output`` (if given). The API the CLI uses.

    Rows with measured power refit the power terms (:func:`_power`; ``base_terms``,
    ``node_power_log``: :mod:`trainscale.calibrate.user_power`), the file's ``power`` block.
    ``measurements``: the path or paths (tables, ingested Parquet, run folders, folders of
    them: :func:`~trainscale.calibrate.measurements.read_measurements`, with ``ingest`` reading
    run folders, unless ``table`` is given; hashed for the provenance). ``table``: the
    measurements already read, a DataFrame with the configuration columns of ``trainscale
    predict`` and :data:`MEASURED`; one row or more.
    ``base``: the calibration to start from and shrink toward (``trainscale calibrate`` passes
    the shipped ``data/calibration.yaml``). The pilot interval model: from ``pilot_errors`` (rows
    of :func:`trainscale.calibrate.pilot_series.pilot_errors`) if given, else from ``stored`` (the
    base file's block) if measured with ``base``, else measured on ``published`` (the data, or a
    function loading them) with a note (:func:`trainscale.calibrate.stored.pilot_model`).
    ``catalogue``: what every fit simulates with.

    Returns a :class:`UserCalibration`: ``calibration`` (with an ``intervals`` block whose
    ``pilot`` part widens with the distance from the measured GPU counts), ``rows`` (the measured
    rows predicted by it, with ``ape_pct``), ``refitted``, ``not_refitted`` (candidates the chosen
    refit left at the base value) and ``report`` (:class:`~trainscale.calibrate.pilot.PilotReport`:
    the ladder with each candidate's leave-largest-scale-out error, the chosen rung, the refit's
    in-sample error and the base's error on the same rows).
    """
    from trainscale.calibrate.pilot import refit_pilots
    from trainscale.calibrate.pilot_series import pilot_interval_model
    from trainscale.calibrate.stored import pilot_model
    from trainscale.published.accuracy import throughput_predictions
    from trainscale.published.measurements import PublishedData

    paths = [Path(measurements)] if isinstance(measurements, (str, Path)) else list(measurements)
    path = paths[0] if len(paths) == 1 else Path(", ".join(map(str, paths)))
    found, table = _measured(paths, path, table, base=base, catalogue=catalogue, ingest=ingest)
    table = measured_power(table, node_power_log)  # GPU and node power where rows carry them
    fitted, report = refit_pilots(table, base=base, catalogue=catalogue)
    if pilot_errors is not None:
        pilot, note = pilot_interval_model(pilot_errors, table["num_gpus"]), None
    else:
        pilot, note = pilot_model(
            table["num_gpus"], base=base, stored=stored, published=published, catalogue=catalogue
        )
    rows = table.assign(
        observed_tokens_per_s_per_gpu=table[MEASURED], citation=str(path),
        csv_row=np.arange(1, len(table) + 1),
    )  # fmt: skip
    data = PublishedData(
        throughput=rows, collectives=pd.DataFrame(), rejects=pd.DataFrame(columns=["csv_row"])
    )
    before, _ = throughput_predictions(data, base, catalogue)
    pilot = _with_levels(pilot, before, base)
    after, _ = throughput_predictions(data, fitted, catalogue)
    final = replace(fitted, intervals=_user_intervals(base.intervals, after, pilot, catalogue))
    final, power = _power(table, final, base, base_terms, catalogue)
    after, _ = throughput_predictions(data, final, catalogue)
    not_refitted = [n for n in report.candidates[report.chosen] if n not in report.refitted]
    files = found.files if found is not None else paths
    if output is not None:
        provenance = _provenance(files, paths, table, found, base, report, not_refitted, before,
                                 after)  # fmt: skip
        blocks = {"power": user_power_block(power, ", ".join(map(str, files)))} if power else None
        dump_calibration(final, output, provenance, blocks)
    return UserCalibration(
        final, after, list(report.refitted), not_refitted, report,
        on_bounds=refitted_on_bounds(final, report.refitted), measurements=found, power=power,
        notes=[note] if note else [],
    )  # fmt: skip


def _measured(
    paths: list[Path],
    path: Path,
    table: pd.DataFrame | None,
    *,
    base: Calibration,
    catalogue: Catalogue,
    ingest: RunIngester | None,
) -> tuple[Measurements | None, pd.DataFrame]:
    """The measurements read from ``paths`` (:func:`read_measurements`), or the ``table`` given
    instead (then no :class:`Measurements`); an empty table is an error naming ``path``."""
    if table is None:
        found = read_measurements(paths, catalogue=catalogue, base=base, ingest=ingest)
        return found, found.table
    table = table.reset_index(drop=True)
    if table.empty:
        raise InputFileError(path, "no measured row; give at least one measured configuration")
    return None, table


def _power(
    table: pd.DataFrame,
    fitted: Calibration,
    base: Calibration,
    base_terms: PowerTerms | None,
    catalogue: Catalogue,
) -> tuple[Calibration, UserPowerFit | None]:
    """The power refit (:mod:`trainscale.calibrate.user_power`) where rows carry measured
    power, from ``fitted`` and ``base_terms`` (None: the priors; the CLI passes the shipped
    power block): its calibration
    and the fit; ``fitted`` and None without measured power."""
    if not has_measured_power(table):
        return fitted, None
    if base_terms is None:
        from trainscale.sim.energy import PowerTerms

        base_terms = PowerTerms()
    fit = refit_user_power(table, fitted, base_terms, catalogue=catalogue,
                           shipped=(base, base_terms))  # fmt: skip
    return fit.calibration, fit


def _provenance(
    files: list[Path],
    given: list[Path],
    table: pd.DataFrame,
    found: Measurements | None,
    base: Calibration,
    report: PilotReport,
    not_refitted: list[str],
    before: pd.DataFrame,
    after: pd.DataFrame,
) -> dict[str, object]:
    """The written file's provenance: the measurements, the ladder, the errors before and after."""
    from trainscale.calibrate.fit import line_ranges

    def sha(path: Path) -> str:
        return digest(path) if path.exists() else ""

    if len(files) == 1:
        read: dict[str, object] = {"file": str(files[0]), "sha256": sha(files[0])}
    else:
        counts = found.origins["file"].value_counts() if found is not None else {}
        read = {"files": [
            {"file": str(f), "sha256": sha(f), "rows": int(counts.get(str(f), 0))} for f in files
        ]}  # fmt: skip
    provenance = {
        "method": "pilot refit (trainscale.calibrate.pilot): a nested ladder level -> "
        "+network (rows at 2+ node counts) -> +layout (rows in 2+ layouts), each candidate "
        "scored by predicting the largest measured GPU count from the smaller ones, the "
        "simplest within noise of the best kept; fit_throughput on the measurements alone, "
        "priors centred on the base calibration, prior_scale = 1 / row log noise; every "
        "other parameter keeps the base value",
        "command": f"trainscale calibrate --measurements {' '.join(map(str, given))}",
        "base_calibration_id": base.calibration_id,
        "measurements": {
            **read,
            "rows": len(table),
            "rows_used": line_ranges(range(1, len(table) + 1)),
        },
        "refitted": list(report.refitted),
        "ladder": [
            {
                "rung": str(r.rung),
                "parameters": str(r.parameters),
                "leave_largest_scale_out_mape_pct": None
                if np.isnan(r.llso_mape_pct)
                else round(float(r.llso_mape_pct), 2),
                "chosen": bool(r.chosen),
            }
            for r in report.ladder.itertuples()
        ],
        "chosen": report.chosen,
        "noise_pct": None if np.isnan(report.noise_pct) else round(report.noise_pct, 2),
        "not_refitted_kept_base_value": not_refitted,
        "residual_error": {
            "base_mape_pct": round(float(before["ape_pct"].mean()), 2),
            "fitted_mape_pct": round(float(after["ape_pct"].mean()), 2),
        },
    }
    return provenance


def _with_levels(pilot: PilotIntervals, rows: pd.DataFrame, base: Calibration) -> PilotIntervals:
    """``pilot`` with the (framework, GPU) pairs of the measured ``rows`` (predicted, so
    resolved) and ``base``'s framework offsets, the shipped level of every other pair
    (:mod:`trainscale.sim.levels`)."""
    pairs = zip(rows["framework"].astype(str), rows["gpu"].astype(str), strict=True)
    return replace(
        pilot,
        measured_levels=tuple(sorted(set(pairs))),
        shipped_offsets=tuple(
            (fw, b, value) for fw, by_base in base.framework_offsets.items()
            for b, value in by_base.items()
        ),
    )  # fmt: skip


def _user_intervals(
    shipped: PredictionIntervals | None,
    rows: pd.DataFrame,
    pilot: PilotIntervals,
    catalogue: Catalogue,
) -> PredictionIntervals | None:
    if shipped is None:
        return None
    return replace(
        shipped,
        facts=shipped.facts.merged(CoverageFacts.of(rows, catalogue.framework_keys)),
        coverage=None,
        note="user calibration: intervals from the pilot block (errors of pilot-calibrated "
        "predictions on published scaling series, each series' base fitted without its source, "
        "as a function of the distance from the measured GPU counts); the conformal quantiles "
        "and coverage facts are the base calibration's, kept for the record",
        pilot=pilot,
    )
