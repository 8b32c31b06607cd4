"""The measurements of ``trainscale calibrate --measurements PATH [PATH ...]``, read and checked.

Each path is one of:

- a **table** (``.csv`` or ``.parquet``): the configuration columns of ``trainscale predict`` plus
  ``measured_tokens_per_s_per_gpu`` (tokens/s per GPU);
- a **Parquet file written by** ``trainscale ingest``: its rows have ``source`` = ``measured``
  and their ``tokens_per_s_per_gpu`` is the measurement (a row of another source is refused);
- a **run folder** (holding ``run.yaml``): ingested on the fly, as ``trainscale ingest`` does;
- a **folder of run folders and tables**: every direct sub-folder holding ``run.yaml`` and every
  ``.csv``/``.parquet`` file in it, in name order (not recursive). A folder holding none of them
  is an error that says what it looked for; a folder is never called "no such file".

The ingester is passed in by the caller (``trainscale calibrate`` passes
:func:`trainscale.ingest.runs.ingest_run`): ingest and calibrate are sibling layers that do not
import each other (``[tool.importlinter]`` in pyproject.toml).

Checks, each an error naming the file (or run folder), the 0-based data row and the column:

- a table with no data row (empty or header only);
- missing columns, text in number columns, configurations the simulator cannot represent;
- a measurement that is not a finite positive number;
- a measurement implying **MFU above 100 %**: MFU = model FLOPs per token (the simulator's
  :func:`~trainscale.sim.model.flops.model_flops_per_token`, via its own predicted ``mfu``, which
  is linear in tokens/s) x tokens/s / (GPUs x the GPU's peak at the row's precision);
- a measurement more than :attr:`MeasurementChecks.max_over_prediction` (3) times the
  simulator's prediction for the row with the base calibration. Why 3: on the 291 usable
  published rows the largest measured/predicted ratio is 1.32 with the shipped calibration and
  1.14 with the priors (``Calibration.defaults()``), so 3 leaves more than twice the worst
  error the model has shown, while the usual unit slips (tokens/s of the whole job for 2 GPUs
  or more with a large MFU, step time in ms, samples counted as tokens) land above it. A cluster
  really 3x faster than the physics the simulator models would be a finding worth a bug report,
  not a calibration;
- a measurement implying **MFU below 0.5 %** (:attr:`MeasurementChecks.min_mfu`, the floor of
  ``trainscale ingest``: the slowest shipped GPU run measures 2.2 %), or more than
  :attr:`MeasurementChecks.max_under_prediction` (10) times below the prediction: on the 291
  published rows the smallest measured/predicted ratio is 0.41 with the shipped calibration
  (``results/validation.parquet``, observed / predicted), so 10 leaves four times the worst
  error while tokens/s per GPU written as per second of a thousand-step run, or 0.001, land
  below it;
- **conflicting duplicates**: rows with the same configuration (compared after the simulator
  resolved it, so ``model: llama2-7b`` and its shape columns are the same configuration), in
  one file or across files, whose measurements differ by more than
  :attr:`MeasurementChecks.duplicate_tolerance` (10 %; run-to-run noise of one job on one
  cluster is a few %, e.g. the step-time IQR of ``data/runs/megatron_golden_345m`` is 0.8 %):
  an error naming both rows. Duplicates within the tolerance are kept, with a warning (each
  counts as one row of the fit, so the configuration weighs more).

After the refit, :func:`refitted_on_bounds` names every refitted parameter that sits on one of
its bounds (``trainscale.sim.parameters.parameters``): such a value is held by the bound, not
by the data, and the CLI warns with its name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError, InputFileError, row_numbering
from trainscale.sim.calibration import Calibration
from trainscale.sim.parameters import parameters

if TYPE_CHECKING:
    from trainscale.sim.catalogue import Catalogue

__all__ = [
    "MEASURED",
    "MeasurementChecks",
    "Measurements",
    "RunIngester",
    "digest",
    "read_measurements",
    "refitted_on_bounds",
]

MEASURED = "measured_tokens_per_s_per_gpu"
#: The measurement column of a table written by ``trainscale ingest``.
INGESTED = "tokens_per_s_per_gpu"
#: The table suffixes read (a folder's other files are ignored).
TABLE_SUFFIXES = (".csv", ".parquet")
#: ``ingest(run_dir) -> dataset rows`` (the first item of
#: :func:`trainscale.ingest.runs.ingest_run`'s result, with the caller's catalogues bound).
RunIngester = Callable[[Path], pd.DataFrame]


@dataclass(frozen=True)
class MeasurementChecks:
    """The bounds a measurement must respect (see the module docstring for why these values).

    ``max_mfu``: the largest model FLOPs utilisation (fraction) a measurement may imply.
    ``min_mfu``: the smallest MFU a measurement may imply (the ingest floor,
    :data:`trainscale.ingest.plausibility.MFU_FLOOR`, 0.5 %).
    ``max_over_prediction``: the largest measured/predicted tokens/s per GPU (base calibration).
    ``max_under_prediction``: the largest predicted/measured tokens/s per GPU.
    ``duplicate_tolerance``: the largest relative difference, ``max/min - 1``, between two
    measurements of one configuration that is still noise.
    """

    max_mfu: float = 1.0
    min_mfu: float = 0.005
    max_over_prediction: float = 3.0
    max_under_prediction: float = 10.0
    duplicate_tolerance: float = 0.10


@dataclass
class Measurements:
    """What :func:`read_measurements` read.

    ``table``: every row, the configuration columns plus :data:`MEASURED` (tokens/s per GPU),
    index 0..n-1. ``origins``: one row per row of ``table``: ``file`` (the path given, or the
    table or run folder inside a given folder) and ``row`` (0-based data row in that file).
    ``files``: the files and run folders read, in order. ``warnings``: one line each.
    """

    table: pd.DataFrame
    origins: pd.DataFrame
    files: list[Path]
    warnings: list[str] = field(default_factory=list)

    def where(self, row: int) -> str:
        """``FILE row R`` of the combined table's row ``row``."""
        origin = self.origins.iloc[row]
        return f"{origin['file']} row {int(origin['row'])}"


def _rows(index: object) -> str:
    from trainscale.calibrate.fit import line_ranges

    return line_ranges(int(i) for i in index)  # type: ignore[union-attr]


def _sources(path: Path) -> list[tuple[Path, str]]:
    """The (path, kind) pairs ``path`` stands for; kind is ``table`` or ``run``."""
    if path.is_file():
        return [(path, "table")]
    if not path.is_dir():
        raise InputFileError(path, "no such file or folder")
    if (path / "run.yaml").is_file():
        return [(path, "run")]
    found: list[tuple[Path, str]] = []
    for entry in sorted(path.iterdir()):
        if entry.is_dir() and (entry / "run.yaml").is_file():
            found.append((entry, "run"))
        elif entry.is_file() and entry.suffix.lower() in TABLE_SUFFIXES:
            found.append((entry, "table"))
    if not found:
        raise InputFileError(
            path,
            "is a folder with no run.yaml, no sub-folder holding one and no .csv or .parquet "
            "table; give a run folder (run.yaml + logs), a folder of them, or measurement tables",
        )
    return found


def _measured_column(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """An ingested table's ``tokens_per_s_per_gpu`` as :data:`MEASURED` (measured rows only)."""
    if MEASURED in table.columns or INGESTED not in table.columns or "source" not in table:
        return table
    other = np.flatnonzero((table["source"] != "measured").to_numpy())
    if len(other):
        kinds = ", ".join(sorted(set(map(str, table["source"].iloc[other]))))
        raise InputFileError(
            path,
            f"row(s) {_rows(other)}{row_numbering(str(path))} have source {kinds}; only rows "
            f"with source 'measured' (written by trainscale ingest) are measurements",
        )
    return table.rename(columns={INGESTED: MEASURED})


def _checked_table(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """Columns, numbers and measured values of one file's rows (errors name ``path``)."""
    from trainscale.sim.inputs import (
        REQUIRED_COLUMNS,
        SHAPE_COLUMNS,
        check_table,
        missing_configuration_columns,
    )

    if table.empty:
        raise InputFileError(
            path,
            "no measured row (the table is empty or holds only its header); give at least one "
            f"measured configuration with {MEASURED}",
        )
    table = _measured_column(path, table)
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


def _represent(path: Path, table: pd.DataFrame, catalogue: Catalogue) -> None:
    """Refuse rows the simulator cannot represent, naming them and why."""
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


def _plausible(
    path: Path, table: pd.DataFrame, column: str, base: Calibration, catalogue: Catalogue,
    checks: MeasurementChecks,
) -> None:  # fmt: skip
    """Refuse measurements above MFU ``checks.max_mfu`` or far above the simulator's prediction."""
    from trainscale.sim.configs import build_configs
    from trainscale.sim.simulate import predict_arrays

    configs, _, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, origin=str(path),
    )  # fmt: skip
    predicted = predict_arrays(configs, base, catalogue)
    measured = table[MEASURED].to_numpy(np.float64)
    ratio = measured / predicted["tokens_per_s_per_gpu"]
    mfu = predicted["mfu"] * ratio  # MFU is linear in tokens/s: same FLOPs per token and peak
    problems: list[tuple[int, str, str]] = []
    for row in range(len(table)):
        value = f"{measured[row]:,.6g} tokens/s per GPU"
        if mfu[row] > checks.max_mfu:
            problems.append((row, column, (
                f"{value} implies MFU {100 * mfu[row]:.0f} % (model FLOPs per token x tokens/s "
                f"/ the peak of {configs.plan.num_gpus[row]} x {table['gpu'].iloc[row]} at "
                f"{table['precision'].iloc[row]}); at most {100 * checks.max_mfu:.0f} % is "
                "possible: is it tokens/s of the whole job, or a step time in ms?"
            )))  # fmt: skip
        elif mfu[row] < checks.min_mfu or ratio[row] < 1 / checks.max_under_prediction:
            problems.append((row, column, (
                f"{value} implies MFU {100 * mfu[row]:.3g} % and is {1 / ratio[row]:.3g} x below "
                f"the simulator's prediction ({predicted['tokens_per_s_per_gpu'][row]:,.6g}, "
                f"calibration {base.calibration_id}); allowed: MFU at least "
                f"{100 * checks.min_mfu:g} % and at most {checks.max_under_prediction:g} x below "
                "the prediction (published runs: at most 2.5 x): check the units (tokens/s per "
                "GPU) and the configuration columns"
            )))  # fmt: skip
        elif ratio[row] > checks.max_over_prediction:
            problems.append((row, column, (
                f"{value} is {ratio[row]:.1f} x the simulator's prediction "
                f"({predicted['tokens_per_s_per_gpu'][row]:,.6g}, calibration "
                f"{base.calibration_id}); more than {checks.max_over_prediction:g} x is "
                "beyond any error the model has shown on published runs (at most 1.32 x): "
                "check the units and the configuration columns"
            )))  # fmt: skip
    if problems:
        raise ConfigurationError(problems, origin=str(path))


def _configuration_keys(table: pd.DataFrame, catalogue: Catalogue) -> pd.DataFrame:
    """The simulator's resolved configuration of every row (one column per field)."""
    from trainscale.sim.configs import build_configs

    configs, _, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    columns = {
        name: value
        for name, value in configs.flat().items()
        if isinstance(value, np.ndarray) and value.shape == (len(table),)
    }
    return pd.DataFrame(columns)


def _duplicates(found: Measurements, catalogue: Catalogue, checks: MeasurementChecks) -> None:
    """Refuse conflicting duplicate configurations; warn about agreeing ones."""
    keys = _configuration_keys(found.table, catalogue)
    repeated = keys.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    measured = found.table[MEASURED].to_numpy(np.float64)
    groups = keys[repeated].groupby(list(keys.columns), dropna=False, sort=False).indices
    conflicts, agreeing = [], []
    for positions in groups.values():
        rows = np.flatnonzero(repeated)[positions]
        low, high = int(rows[np.argmin(measured[rows])]), int(rows[np.argmax(measured[rows])])
        spread = measured[high] / measured[low] - 1
        if spread > checks.duplicate_tolerance:
            conflicts.append(
                f"{found.where(low)} ({measured[low]:,.6g}) and {found.where(high)} "
                f"({measured[high]:,.6g}) differ by {100 * spread:.1f} %"
            )
        else:
            agreeing.append(", ".join(found.where(int(r)) for r in rows))
    if conflicts:
        raise InputFileError(
            found.files[0] if len(found.files) == 1 else ", ".join(map(str, found.files)),
            f"conflicting measurements of the same configuration ({MEASURED}, rows 0-based; "
            f"more than {100 * checks.duplicate_tolerance:g} % apart): " + "; ".join(conflicts)
            + "; remove the wrong one or give the rows a column that tells them apart",
        )  # fmt: skip
    for rows in agreeing:
        found.warnings.append(
            f"the same configuration is measured more than once ({rows}; within "
            f"{100 * checks.duplicate_tolerance:g} %): each counts as one row of the fit"
        )


def _one(
    path: Path, kind: str, ingest: RunIngester | None, catalogue: Catalogue, base: Calibration,
    checks: MeasurementChecks,
) -> pd.DataFrame:  # fmt: skip
    """One table or run folder's rows, checked."""
    from trainscale.io.tables import read_table

    if kind == "run":
        if ingest is None:
            raise InputFileError(
                path, "is a run folder; reading it needs the ingester (trainscale calibrate "
                "passes trainscale ingest's), or ingest it first with trainscale ingest"
            )  # fmt: skip
        raw = ingest(path)
    else:
        raw = read_table(path)
    column = MEASURED if MEASURED in raw.columns else INGESTED
    table = _checked_table(path, raw)
    _represent(path, table, catalogue)
    _plausible(path, table, column, base, catalogue, checks)
    return table


def read_measurements(
    paths: Path | str | Sequence[Path | str],
    *,
    catalogue: Catalogue,
    base: Calibration,
    ingest: RunIngester | None = None,
    checks: MeasurementChecks | None = None,
) -> Measurements:
    """Read and check the measurements at ``paths`` (one or several; see the module docstring).

    ``catalogue`` and ``base`` are what the plausibility checks simulate with (``trainscale
    calibrate`` passes the shipped ones); ``ingest`` reads run folders (none: a run folder is
    an error saying so).
    Returns :class:`Measurements`; raises :class:`~trainscale.errors.InputFileError` or
    :class:`~trainscale.errors.ConfigurationError` naming file, row and column.
    """
    checks = MeasurementChecks() if checks is None else checks
    given = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not given:
        raise InputFileError("--measurements", "no path given")
    tables, origins, files = [], [], []
    for path in given:
        for source, kind in _sources(path):
            table = _one(source, kind, ingest, catalogue, base, checks)
            tables.append(table)
            origins.append(pd.DataFrame({"file": str(source), "row": np.arange(len(table))}))
            files.append(source)
    table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    found = Measurements(table, pd.concat(origins, ignore_index=True), files)
    _duplicates(found, catalogue, checks)
    return found


def digest(path: Path) -> str:
    """sha256 of a file's bytes; of a folder: over its files' relative paths and bytes, in name
    order (so a run folder's provenance changes when any of its logs does)."""
    sha = hashlib.sha256()
    if path.is_file():
        sha.update(path.read_bytes())
        return sha.hexdigest()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        sha.update(item.relative_to(path).as_posix().encode() + b"\0")
        sha.update(hashlib.sha256(item.read_bytes()).digest())
    return sha.hexdigest()


def refitted_on_bounds(
    calibration: Calibration, refitted: Sequence[str], *, rel_tol: float = 1e-6
) -> list[str]:
    """The parameters of ``refitted`` whose value in ``calibration`` is on one of their bounds
    (within ``rel_tol`` of the bound range), each as ``name (value, lower|upper bound B)``."""
    values = calibration.as_dict()
    out = []
    for spec in parameters(calibration.frameworks):
        if spec.name not in refitted:
            continue
        tolerance = rel_tol * (spec.upper - spec.lower)
        for side, bound in (("lower", spec.lower), ("upper", spec.upper)):
            if abs(values[spec.name] - bound) <= tolerance:
                out.append(f"{spec.name} ({values[spec.name]:.6g}, its {side} bound {bound:g})")
    return out
