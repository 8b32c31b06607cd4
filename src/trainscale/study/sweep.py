"""Studies: one sweep of training configurations per file (``config/studies/<name>.yaml``).

A study file holds ``description``, ``fixed`` (configuration column -> value), ``sweep``
(configuration column -> list of values; the grid is the cartesian product of the lists, last
axis fastest), and optionally ``derive``, ``filters`` and ``rows_per_job``. The format is the
JSON Schema ``workflow/schemas/study.schema.yaml``; column names are those of
:data:`trainscale.schema.CONFIGURATION_COLUMNS`, units in the names.

- :func:`load_study` reads a file and checks it against the schema and the catalogues (GPU and
  model names); any problem raises :class:`~trainscale.errors.InputFileError` naming the file,
  the key and what is allowed. The workflow calls it at start-up, so an invalid study stops the
  run before any job starts.
- :func:`grid_blocks` yields the grid in blocks of :data:`BLOCK_ROWS` rows by index arithmetic
  over the sweep lists (the full grid is never built); :func:`expand_block` applies ``derive``,
  the filters, the simulator's validator and ``fits_memory`` (a prediction of the block) to one
  block; :func:`write_study_configurations` streams a study into one configuration file per
  simulate job (``rows_per_job`` kept rows each), a rejects table (every dropped row with its
  reason) and a small JSON of counts, in bounded memory whatever the grid size.
  :func:`expand_study` does the same in memory for small studies and tests.
- A study with no row left is an error naming the file and what removed the rows; one that
  loses more than half of its rows gets a warning with the counts
  (:meth:`ExpansionSummary.check`).
- :func:`chunk_count` and :func:`simulate_configurations` size and simulate one chunk.

In the configuration table ``micro_batch`` is a nullable integer: null stands for ``"auto"``,
resolved per row by :func:`trainscale.study.micro_batch.resolve_micro_batch` when the chunk is
simulated (so a large sweep resolves in parallel jobs).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.io.atomic import atomic_directory, write_text_atomic
from trainscale.io.parquet import ParquetStream, write_parquet
from trainscale.io.schema import schema_problems, subschema, validator
from trainscale.io.yaml import load_yaml
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    MODEL_SHAPE_COLUMNS,
    REJECT_COLUMNS,
    Column,
    names,
)
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.degrees import data_parallel_degree
from trainscale.sim.model.shape import ModelShape
from trainscale.sim.simulate import predict
from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.limits import product_problems
from trainscale.study.micro_batch import resolve_micro_batch

__all__ = [
    "AUTO",
    "BLOCK_ROWS",
    "ExpansionSummary",
    "Filters",
    "Study",
    "chunk_count",
    "configuration_columns",
    "expand_block",
    "expand_blocks",
    "expand_study",
    "grid_blocks",
    "load_study",
    "simulate_configurations",
    "write_study_configurations",
]

#: The ``micro_batch`` value that asks for the largest local-batch divisor that fits in memory.
AUTO = "auto"

#: Columns the simulator cannot do without (besides ``model`` or all shape columns).
_REQUIRED = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip
_SHAPE = tuple(names(MODEL_SHAPE_COLUMNS))
_COLUMNS = {c.name: c for c in CONFIGURATION_COLUMNS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """Rules that drop rows of a study's grid (``filters`` in the study file)."""

    drop_invalid: bool = True
    """Rows the validator rejects go to the rejects table (True) or fail the job (False)."""
    fits_memory: bool = False
    """Drop rows whose predicted memory per GPU exceeds the usable HBM (after simulation)."""
    max_model_parallel: int | None = None
    """Drop rows where tp·pp·cp exceeds this; None means no limit."""
    max_tp_per_node: bool = False
    """Drop rows whose tensor-parallel group spans nodes (tp > GPUs per node)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Study:
    """A validated study file."""

    name: str
    """File name without ``.yaml``; names results/sim/<name>.parquet."""
    path: str
    """The file, as given to :func:`load_study` (used in messages)."""
    description: str
    fixed: Mapping[str, Any]
    """Configuration column -> value for every row."""
    sweep: Mapping[str, list[Any]] = field(default_factory=dict)
    """Configuration column -> values; the grid is their cartesian product."""
    derive: Mapping[str, int] = field(default_factory=dict)
    """``global_batch_tokens`` (tokens) or ``sequences_per_dp_rank`` (sequences)."""
    filters: Filters = field(default_factory=Filters)
    rows_per_job: int | None = None
    """Configurations per simulate job; None means the workflow's default."""
    calibration: str | None = None
    """Calibration file to simulate with (``calibration:``); None means data/calibration.yaml
    (or, with :attr:`calibration_measurements`, the file the workflow calibrates from them)."""
    calibration_measurements: tuple[str, ...] = ()
    """``calibration: {measurements: [...]}``: the paths (tables, ingested Parquet, run folders)
    the workflow's rule calibrate_study calibrates this study on; empty for none."""
    report: Mapping[str, Any] = field(default_factory=dict)
    """The ``report:`` block (x axis, series, facet, best_of, metrics of the per-study outputs);
    empty means the defaults of :func:`trainscale.study.report.report_spec`."""

    @property
    def grid_size(self) -> int:
        """Rows of the grid before derive and filters drop any (the product of sweep lengths)."""
        return math.prod(len(values) for values in self.sweep.values())


# --------------------------------------------------------------------------------------------
# Loading and checking


def _catalogue_problems(
    fixed: Mapping[str, Any],
    sweep: Mapping[str, list[Any]],
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> list[tuple[str, str]]:
    valid = {
        "gpu": ("GPU", sorted(hardware.gpus)),
        "model": ("model", sorted(models)),
    }
    problems = []
    for column, (kind, allowed) in valid.items():
        places = [(f"fixed.{column}", fixed[column])] if column in fixed else []
        places += [(f"sweep.{column}[{i}]", v) for i, v in enumerate(sweep.get(column, []))]
        for key, value in places:
            if value not in allowed and not (column == "model" and value == ""):
                problems.append((key, f"unknown {kind} {value!r}; valid: {', '.join(allowed)}"))
    return problems


def _finite_problems(data: Mapping[str, Any], root: dict[str, Any]) -> list[tuple[str, str]]:
    """Numbers that are not finite (YAML ``.inf``, ``.nan``): JSON Schema's ``exclusiveMinimum``
    lets infinity through, and NaN passes every comparison."""
    problems = []
    for section in ("fixed", "sweep", "derive"):
        for key, value in (data.get(section) or {}).items():
            places = (
                [(f"{section}.{key}[{i}]", [section, key, i], v) for i, v in enumerate(value)]
                if isinstance(value, list)
                else [(f"{section}.{key}", [section, key], value)]
            )
            for name, path, number in places:
                if isinstance(number, float) and not math.isfinite(number):
                    meaning = " ".join(subschema(root, path).get("description", "").split())
                    problems.append(
                        (name, f"{number} is not a finite positive number"
                         + (f" ({meaning})" if meaning else ""))
                    )  # fmt: skip
    return problems


def _completeness_problems(
    fixed: Mapping[str, Any], sweep: Mapping[str, list[Any]], derive: Mapping[str, int]
) -> list[tuple[str, str]]:
    problems = [
        (f"sweep.{c}", "also given under 'fixed'; give each column in one place")
        for c in sweep
        if c in fixed
    ]
    for key in derive:
        for section, given in (("fixed", fixed), ("sweep", sweep)):
            if "global_batch" in given:
                problems.append(
                    (f"derive.{key}", f"derives global_batch, which is also given under "
                     f"'{section}'; give one of them")
                )  # fmt: skip
    given = set(fixed) | set(sweep) | ({"global_batch"} if derive else set())
    missing = [c for c in _REQUIRED if c not in given]
    if missing:
        problems.append(
            ("fixed", f"missing configuration column(s) {', '.join(missing)}: give them under "
             "'fixed' or 'sweep' (global_batch may come from 'derive')")
        )  # fmt: skip
    models = [fixed["model"]] if "model" in fixed else list(sweep.get("model", []))
    if (not models or "" in models) and not all(c in given for c in _SHAPE):
        problems.append(
            ("fixed.model", "give a model catalogue key, or all of " + ", ".join(_SHAPE))
        )
    return problems


def load_study(
    path: str | Path,
    *,
    schema: str | Path,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> Study:
    """Read and check one study file; return the :class:`Study`.

    Parameters
    ----------
    path
        ``config/studies/<name>.yaml``; the name is the file name without ``.yaml``.
    schema
        ``workflow/schemas/study.schema.yaml`` (JSON Schema 2020-12).
    hardware, models
        The GPU and model catalogues the names are checked against (the caller's, e.g.
        ``catalogue.hardware`` and ``catalogue.models`` of :mod:`trainscale.sim.catalogue`).
        A study that names its own ``calibration:`` file has that file read and checked too.

    Raises
    ------
    trainscale.errors.InputFileError
        Naming the file, then one line per problem with the key (``fixed.gpu``,
        ``sweep.num_gpus[2]``) and what is allowed (for GPUs and models: the valid names).
        Every number is bounded by the schema, and the products of the grid's largest values
        by :func:`trainscale.study.limits.product_problems` (tokens per step, derived batch).
    """
    path = Path(path)
    data = load_yaml(path)
    _, root = validator(str(Path(schema).resolve()))
    problems = schema_problems(data, schema)
    if isinstance(data, dict):
        finite = _finite_problems(data, root)
        problems = finite + [p for p in problems if p[0] not in {k for k, _ in finite}]
        problems += _semantic_problems(data, {key for key, _ in problems}, hardware, models)
        problems += product_problems(data, {key for key, _ in problems})
    if problems:
        lines = [f"key '{key}': {message}" for key, message in problems]
        raise InputFileError(
            path, lines[0] if len(lines) == 1 else "invalid study:\n  " + "\n  ".join(lines)
        )
    calibration = data.get("calibration")  # a file, or {measurements: [...]} (schema-checked)
    return Study(
        name=path.stem,
        path=str(path),
        description=data["description"],
        fixed=dict(data["fixed"]),
        sweep={key: list(values) for key, values in data.get("sweep", {}).items()},
        derive=dict(data.get("derive", {})),
        filters=Filters(**data.get("filters", {})),
        rows_per_job=data.get("rows_per_job"),
        calibration=calibration if isinstance(calibration, str) else None,
        calibration_measurements=tuple(calibration["measurements"])
        if isinstance(calibration, dict)
        else (),
        report=dict(data.get("report", {})),
    )


def _semantic_problems(
    data: dict[str, Any],
    reported: set[str],
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> list[tuple[str, str]]:
    """The catalogue, completeness and calibration checks, made beside the schema's, so that
    every problem of a study is listed at once (an unknown GPU and a bad sharding together);
    only on the sections of the right shape, and not again for a key the schema reported."""

    def section(name: str) -> dict[str, Any]:
        value = data.get(name)
        return value if isinstance(value, dict) else {}

    fixed = section("fixed")
    sweep = {key: value for key, value in section("sweep").items() if isinstance(value, list)}
    problems = _catalogue_problems(fixed, sweep, hardware, models)
    problems += _completeness_problems(fixed, sweep, section("derive"))
    calibration = data.get("calibration")
    if isinstance(calibration, str) and "calibration" not in reported:
        problems += _calibration_problems(calibration)
    if isinstance(calibration, dict) and "calibration" not in reported:
        problems += _measurement_path_problems(calibration.get("measurements", []))
    return [(key, message) for key, message in problems if key not in reported]


def _calibration_problems(calibration: str | None) -> list[tuple[str, str]]:
    """The study's ``calibration:`` file must exist and load (bounds, intervals block)."""
    if calibration is None:
        return []
    from trainscale.errors import TrainscaleError
    from trainscale.sim.calibration import load_calibration

    if not Path(calibration).is_file():
        return [
            (
                "calibration",
                f"no such file {calibration!r} (relative to the working "
                "directory; write one with trainscale calibrate --measurements FILE -o PATH)",
            )
        ]
    try:
        load_calibration(calibration)
    except TrainscaleError as error:
        return [("calibration", str(error))]
    return []


def _measurement_path_problems(paths: list[str]) -> list[tuple[str, str]]:
    """Each path of ``calibration: {measurements: [...]}`` must exist (a file or a folder; what
    is in it is read and checked by the rule that calibrates on it)."""
    return [
        (
            "calibration",
            f"measurements: no such file or folder {path!r} (relative to the working "
            "directory; a CSV/Parquet table, a Parquet file of trainscale ingest, a run folder "
            "or a folder of these)",
        )
        for path in paths
        if not Path(path).exists()
    ]


# --------------------------------------------------------------------------------------------
# Expansion


def configuration_columns(study: Study) -> tuple[Column, ...]:
    """The configuration columns a study's table holds (those it gives or derives), in order."""
    given = set(study.fixed) | set(study.sweep) | ({"global_batch"} if study.derive else set())
    return tuple(c for c in CONFIGURATION_COLUMNS if c.name in given)


def _typed(values: np.ndarray, column: Column) -> pd.Series:
    series = pd.Series(values, dtype=object)
    if column.name == "micro_batch":
        series = series.where(series != AUTO, None)
    if column.dtype == "int64":
        return pd.to_numeric(series).astype("Int64")
    if column.dtype == "float64":
        return pd.to_numeric(series).astype("float64")
    if column.dtype == "bool":
        return series.astype("boolean")
    return series.astype("string")


#: Grid rows expanded, filtered and written at a time: memory holds one block, never the grid.
BLOCK_ROWS = 1 << 16


def grid_blocks(study: Study, block_rows: int = BLOCK_ROWS) -> Iterator[tuple[int, pd.DataFrame]]:
    """Yield ``(first grid row, block)``: the grid in order, at most ``block_rows`` rows a block.

    The grid is the cartesian product of the sweep axes (last axis fastest) plus the fixed
    values. Each block is built from its row numbers by index arithmetic over the sweep lists
    (:func:`numpy.unravel_index`), so the full grid is never materialised: a sweep of 10^7 rows
    costs the memory of one block. Each axis's values are typed once; a block column is a
    ``take`` of them.
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be at least 1, got {block_rows}")
    columns = configuration_columns(study)
    axes = list(study.sweep)
    sizes = [len(study.sweep[key]) for key in axes]
    typed: dict[str, Any] = {}
    for c in columns:
        if c.name in study.sweep:
            values = study.sweep[c.name]
        elif c.name in study.fixed:
            values = [study.fixed[c.name]]
        else:  # global_batch, filled by derive
            values = [0]
        typed[c.name] = _typed(np.array(values, dtype=object), c).array
    total = study.grid_size
    for first in range(0, total, block_rows):
        positions = np.arange(first, min(first + block_rows, total), dtype=np.int64)
        index = dict(zip(axes, np.unravel_index(positions, sizes), strict=True)) if axes else {}
        zeros = np.zeros(len(positions), dtype=np.int64)
        block = pd.DataFrame(
            {name: values.take(index.get(name, zeros)) for name, values in typed.items()},
            index=pd.RangeIndex(len(positions)),
        )
        yield first, block


def _grid(study: Study) -> pd.DataFrame:
    """The whole grid in one frame (small studies and tests; the workflow streams blocks)."""
    blocks = [block for _, block in grid_blocks(study, max(study.grid_size, 1))]
    return blocks[0]


def _int_column(frame: pd.DataFrame, name: str, default: int) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), default, dtype=np.int64)
    return frame[name].fillna(default).to_numpy(dtype=np.int64)


def _derive(study: Study, grid: pd.DataFrame) -> list[tuple[int, str, str]]:
    """Fill ``global_batch`` from ``derive``; return the rows that cannot be derived."""
    problems: list[tuple[int, str, str]] = []
    if not study.derive:
        return problems
    ((key, value),) = study.derive.items()
    if key == "global_batch_tokens":
        seq_len = grid["seq_len"].to_numpy(dtype=np.int64)
        ok = value % seq_len == 0
        grid["global_batch"] = pd.array(np.where(ok, value // seq_len, 0), dtype="Int64")
        problems += [
            (int(r), "derive.global_batch_tokens",
             f"global_batch_tokens {value} is not divisible by seq_len {seq_len[r]}")
            for r in np.flatnonzero(~ok)
        ]  # fmt: skip
    else:  # sequences_per_dp_rank
        num_gpus = grid["num_gpus"].to_numpy(dtype=np.int64)
        tp, pp = grid["tp"].to_numpy(dtype=np.int64), grid["pp"].to_numpy(dtype=np.int64)
        cp = _int_column(grid, "cp", 1)
        dp = data_parallel_degree(num_gpus, tp, pp, cp)
        ok = dp > 0
        grid["global_batch"] = pd.array(value * dp, dtype="Int64")
        problems += [
            (int(r), "derive.sequences_per_dp_rank",
             f"dp = num_gpus / (tp·pp·cp) = {num_gpus[r]} / ({tp[r]}·{pp[r]}·{cp[r]}) is not a "
             "whole number")
            for r in np.flatnonzero(~ok)
        ]  # fmt: skip
    return problems


def _filter(
    study: Study, grid: pd.DataFrame, candidates: np.ndarray, hardware: HardwareCatalog
) -> list[tuple[int, str, str]]:
    """Rows among ``candidates`` that a filter drops, with the reason."""
    problems: list[tuple[int, str, str]] = []
    tp = grid["tp"].to_numpy(dtype=np.int64)
    limit = study.filters.max_model_parallel
    if limit is not None:
        pp, cp = grid["pp"].to_numpy(dtype=np.int64), _int_column(grid, "cp", 1)
        degree = tp * pp * cp
        problems += [
            (int(r), "filters.max_model_parallel",
             f"tp·pp·cp = {tp[r]}·{pp[r]}·{cp[r]} = {degree[r]} exceeds max_model_parallel "
             f"{limit}")
            for r in candidates[degree[candidates] > limit]
        ]  # fmt: skip
    if study.filters.max_tp_per_node:
        names, where = np.unique(grid["gpu"].astype(str).to_numpy(), return_inverse=True)
        default = np.array([hardware.system_for(g).gpus_per_node for g in names],
                           dtype=np.int64)[where]  # fmt: skip
        per_node = _int_column(grid, "gpus_per_node", 0)
        per_node = np.where(per_node > 0, per_node, default)
        problems += [
            (int(r), "filters.max_tp_per_node",
             f"tp {tp[r]} exceeds the {per_node[r]} GPUs per node (tensor parallelism would "
             "span nodes)")
            for r in candidates[tp[candidates] > per_node[candidates]]
        ]  # fmt: skip
    return problems


def _fits_memory(
    study: Study, kept: pd.DataFrame, catalogue: Catalogue, calibration: Calibration
) -> list[tuple[int, str, str]]:
    """Rows of ``kept`` (valid rows) whose predicted memory per GPU does not fit, with the
    reason: the block is simulated as its chunk will be (``"auto"`` resolved first)."""
    if not study.filters.fits_memory or kept.empty:
        return []
    frame = kept.copy()
    if "micro_batch" in frame.columns:
        micro = frame["micro_batch"].astype(object)
        frame["micro_batch"] = micro.where(micro.notna(), AUTO)
    results = predict(
        resolve_micro_batch(frame, catalogue=catalogue, calibration=calibration),
        catalogue=catalogue,
        calibration=calibration,
    )
    fits = results["fits_memory"].to_numpy(dtype=bool)
    memory = results["mem_gib_per_gpu"].to_numpy(dtype=float)
    names, where = np.unique(results["gpu"].astype(str).to_numpy(), return_inverse=True)
    hbm = {g: catalogue.hardware.gpus[g].hbm_bytes / 2**30 for g in names}
    gpus = names[where]
    return [
        (int(r), "filters.fits_memory",
         f"predicted {memory[r]:.1f} GiB per GPU does not fit in the usable memory of "
         f"{gpus[r]} ({hbm[gpus[r]]:.0f} GiB)")
        for r in np.flatnonzero(~fits).tolist()
    ]  # fmt: skip


def expand_block(
    study: Study,
    block: pd.DataFrame,
    *,
    first: int = 0,
    catalogue: Catalogue,
    calibration: Calibration,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Derive and filter one block of the grid (from :func:`grid_blocks`); return
    ``(configurations, rejects)`` as :func:`expand_study` does, ``row`` = ``first`` + position.

    Rows are dropped, in this order, by ``derive``, the cheap filters (``max_model_parallel``,
    ``max_tp_per_node``), the simulator's validator (``"auto"`` checked as 1) and, with
    ``filters.fits_memory``, by a prediction of the block's memory per GPU under
    ``catalogue`` and ``calibration``.
    """
    hardware = catalogue.hardware
    grid = block.reset_index(drop=True)
    invalid = _derive(study, grid)
    candidates = np.setdiff1d(np.arange(len(grid)), [r for r, _, _ in invalid])
    filtered = _filter(study, grid, candidates, hardware)
    candidates = np.setdiff1d(candidates, [r for r, _, _ in filtered])
    check = grid.iloc[candidates].reset_index(drop=True)
    if "micro_batch" in check.columns:
        check["micro_batch"] = check["micro_batch"].fillna(1)
    _, _, rejected = build_configs(
        check, origin=study.path, skip_invalid=True, hardware=hardware,
        models=catalogue.models, frameworks=catalogue.frameworks,
    )  # fmt: skip
    invalid += [
        (int(candidates[row]), str(column), str(reason))
        for row, column, reason in zip(rejected["row"].tolist(), rejected["column"].tolist(),
                                       rejected["reason"].tolist(), strict=True)
    ]  # fmt: skip
    if invalid and not study.filters.drop_invalid:
        problems = sorted(((r + first, c, m) for r, c, m in invalid), key=lambda p: p[0])
        raise ConfigurationError(problems, origin=study.path)
    candidates = np.setdiff1d(candidates, [r for r, _, _ in invalid])
    memory = _fits_memory(study, grid.iloc[candidates].reset_index(drop=True), catalogue,
                          calibration)  # fmt: skip
    filtered += [(int(candidates[r]), column, reason) for r, column, reason in memory]
    problems = sorted(invalid + filtered, key=lambda p: p[0])
    dropped = np.zeros(len(grid), dtype=bool)
    dropped[[row for row, _, _ in problems]] = True
    configurations = grid[~dropped].reset_index(drop=True)
    rejects = grid.iloc[[row for row, _, _ in problems]].reset_index(drop=True)
    rejects["row"] = pd.array([row + first for row, _, _ in problems], dtype="Int64")
    rejects["column"] = pd.array([column for _, column, _ in problems], dtype="string")
    rejects["reason"] = pd.array([reason for _, _, reason in problems], dtype="string")
    return configurations, rejects


def _step(column: str) -> str:
    """What dropped a row, for messages: ``filter 'fits_memory'``, ``derive '...'``, ``the
    validator ('tp')``."""
    if column.startswith("filters."):
        return f"filter '{column.removeprefix('filters.')}'"
    if column.startswith("derive."):
        return f"derive '{column.removeprefix('derive.')}'"
    return f"the validator ('{column}')"


@dataclass(slots=True)
class ExpansionSummary:
    """Row counts of one study's expansion: what survived and what dropped how many rows."""

    study: Study
    grid_rows: int = 0
    kept_rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    """Study key or column that dropped a row (its first problem) -> rows, in order of first
    appearance."""
    examples: dict[str, str] = field(default_factory=dict)
    """The same keys -> the reason given for the first row each dropped."""

    def add(self, block_rows: int, configurations: pd.DataFrame, rejects: pd.DataFrame) -> None:
        """Count one block's outcome."""
        self.grid_rows += block_rows
        self.kept_rows += len(configurations)
        if rejects.empty:
            return
        rows = rejects["row"].to_numpy(dtype=np.int64)
        first = np.ones(len(rows), dtype=bool)  # each row's first problem (rows are sorted)
        first[1:] = rows[1:] != rows[:-1]
        # factorize hashes the column in place (sorting millions of strings, or copying them
        # out of Arrow, took seconds) and numbers its values in order of first appearance.
        codes, names = pd.factorize(rejects["column"][first].astype(str))
        counts = np.bincount(codes, minlength=len(names))
        _, where = np.unique(codes, return_index=True)
        reasons = rejects["reason"][first]
        for at, column in enumerate(names):
            self.dropped[str(column)] = self.dropped.get(str(column), 0) + int(counts[at])
            self.examples.setdefault(str(column), str(reasons.iloc[where[at]]))

    @property
    def dropped_rows(self) -> int:
        return self.grid_rows - self.kept_rows

    def _breakdown(self) -> str:
        parts = [
            f"{rows:,} by {_step(column)} (e.g. {self.examples[column]})"
            for column, rows in sorted(self.dropped.items(), key=lambda item: -item[1])
        ]
        return "; ".join(parts)

    def check(self) -> str | None:
        """Raise if no row survived; return a warning when more than half were dropped.

        Raises
        ------
        trainscale.errors.InputFileError
            Naming the study file and every filter or rule that removed rows, with counts, e.g.
            ``config/studies/x.yaml: every one of the 12 grid rows was removed: 12 by filter
            'fits_memory' (e.g. predicted 1101.4 GiB per GPU does not fit ...)``.
        """
        if self.kept_rows == 0:
            raise InputFileError(
                self.study.path,
                f"the study has no rows left: every one of the {self.grid_rows:,} grid rows "
                f"was removed: {self._breakdown()}",
            )
        if 2 * self.dropped_rows > self.grid_rows:
            share = 100 * self.dropped_rows / self.grid_rows
            return (
                f"warning: {self.study.path}: {self.dropped_rows:,} of {self.grid_rows:,} grid "
                f"rows ({share:.1f} %) were removed, {self.kept_rows:,} remain: "
                f"{self._breakdown()}"
            )
        return None


def expand_blocks(
    study: Study,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
    summary: ExpansionSummary | None = None,
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """Yield ``(configurations, rejects)`` block by block, in grid order (see
    :func:`expand_block`); ``summary`` (if given) counts every block."""
    for first, block in grid_blocks(study, block_rows):
        configurations, rejects = expand_block(
            study, block, first=first, catalogue=catalogue, calibration=calibration
        )
        if summary is not None:
            summary.add(len(block), configurations, rejects)
        yield configurations, rejects


def expand_study(
    study: Study,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Expand a study into ``(configurations, rejects)``, held in memory (small studies; the
    workflow streams with :func:`write_study_configurations`).

    ``configurations`` has one row per kept grid row (grid order) and the columns of
    :func:`configuration_columns`; ``micro_batch`` null means ``"auto"``. ``rejects`` has the same
    columns for every dropped row plus :data:`trainscale.schema.REJECT_COLUMNS` (``row``,
    ``column``, ``reason``), one line per problem. Rows are dropped, in this order, by ``derive``
    (derived value not a whole number), ``filters`` (``max_model_parallel``, ``max_tp_per_node``),
    the simulator's validator (checked with ``micro_batch`` 1 for ``"auto"`` rows: the resolved
    value is a divisor of the local batch that passes the same checks) and ``fits_memory``.

    Raises
    ------
    trainscale.errors.ConfigurationError
        With ``filters.drop_invalid: false``, listing every row of the first block that
        ``derive`` or the validator rejects (row = position in the grid).
    trainscale.errors.InputFileError
        When no row survives (see :meth:`ExpansionSummary.check`).
    """
    summary = ExpansionSummary(study)
    parts = list(expand_blocks(study, catalogue=catalogue, calibration=calibration,
                               block_rows=block_rows, summary=summary))  # fmt: skip
    summary.check()
    configurations = pd.concat([c for c, _ in parts], ignore_index=True)
    rejects = pd.concat([r for _, r in parts], ignore_index=True)
    return configurations, rejects


def write_study_configurations(
    study: Study,
    *,
    directory: str | Path,
    rejects: str | Path,
    counts: str | Path,
    rows_per_job: int,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
) -> tuple[ExpansionSummary, str | None]:
    """Expand a study block by block and write its tables; return the summary and warning.

    - ``directory``/``<i>.parquet``: chunk ``i`` of the kept rows (grid order), ``rows_per_job``
      rows each, the last one fewer; one file per simulate job, so a job reads only its rows;
    - ``rejects``: every dropped row with its reason (:data:`trainscale.schema.REJECT_COLUMNS`);
    - ``counts``: JSON with ``chunks`` (the number of files), ``rows``, ``grid_rows``,
      ``rows_per_job`` and ``dropped`` (study key or column -> rows), which the workflow's
      checkpoint reads to plan one job per chunk.

    Memory holds one block and at most one chunk of kept rows. Nothing is left behind when it
    fails: the chunk folder is built next to ``directory`` and renamed onto it at the end, and
    ``counts`` is written last.

    Raises
    ------
    trainscale.errors.InputFileError
        When no row survives (no file is written); see :meth:`ExpansionSummary.check`.
    trainscale.errors.ConfigurationError
        With ``filters.drop_invalid: false`` and an invalid row.
    """
    if rows_per_job < 1:
        raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job}")
    directory, counts = Path(directory), Path(counts)
    columns = configuration_columns(study)
    metadata = {"study": study.name}
    summary = ExpansionSummary(study)
    with atomic_directory(directory) as temp:
        chunks = 0
        pending: list[pd.DataFrame] = []
        pending_rows = 0

        def flush(final: bool) -> None:
            nonlocal chunks, pending, pending_rows
            if not pending:
                return
            frame = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
            start = 0
            while len(frame) - start >= rows_per_job or (final and start < len(frame)):
                part = frame.iloc[start : start + rows_per_job]
                write_parquet(part, temp / f"{chunks}.parquet", columns, metadata)
                chunks += 1
                start += len(part)
            pending = [frame.iloc[start:].reset_index(drop=True)] if start < len(frame) else []
            pending_rows = len(frame) - start

        with ParquetStream(rejects, (*columns, *REJECT_COLUMNS), metadata) as out:
            for configurations, block_rejects in expand_blocks(
                study, catalogue=catalogue, calibration=calibration, block_rows=block_rows,
                summary=summary,
            ):  # fmt: skip
                out.write(block_rejects)
                if len(configurations):
                    pending.append(configurations)
                    pending_rows += len(configurations)
                if pending_rows >= rows_per_job:
                    flush(final=False)
            flush(final=True)
            warning = summary.check()  # raises before the rejects file is renamed into place
    record = {
        "study": study.name,
        "grid_rows": summary.grid_rows,
        "rows": summary.kept_rows,
        "rows_per_job": rows_per_job,
        "chunks": chunks,
        "dropped": summary.dropped,
    }
    write_text_atomic(counts, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return summary, warning


# --------------------------------------------------------------------------------------------
# Chunks and simulation


def chunk_count(rows: int, rows_per_job: int) -> int:
    """Jobs for ``rows`` configurations at ``rows_per_job`` each: ceil(rows / rows_per_job) ≥ 1."""
    if rows_per_job < 1:
        raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job}")
    return max(1, math.ceil(rows / rows_per_job))


def simulate_configurations(
    configurations: pd.DataFrame,
    filters: Filters,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate a (chunk of a) configuration table under ``catalogue`` and ``calibration``;
    return ``(results, dropped)``.

    ``micro_batch`` null (``"auto"``) is resolved first. ``results`` has the columns of
    :func:`trainscale.predict`; with ``filters.fits_memory`` the rows that do not fit are moved
    to ``dropped`` (same columns), otherwise ``dropped`` is empty.
    """
    frame = configurations.reset_index(drop=True).copy()
    if frame.empty:
        return frame, frame
    if "micro_batch" in frame.columns:
        micro = frame["micro_batch"].astype(object)
        frame["micro_batch"] = micro.where(micro.notna(), AUTO)
    results = predict(
        resolve_micro_batch(frame, catalogue=catalogue, calibration=calibration),
        catalogue=catalogue,
        calibration=calibration,
    )
    if not filters.fits_memory:
        return results, results.iloc[0:0]
    fits = results["fits_memory"].to_numpy(dtype=bool)
    return results[fits].reset_index(drop=True), results[~fits].reset_index(drop=True)
