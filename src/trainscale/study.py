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
- :func:`expand_study` turns a study into its configuration table and a rejects table: rows
  dropped by ``derive``, ``filters`` or the simulator's validator, each with its reason.
- :func:`chunk_count`, :func:`chunk_rows` and :func:`simulate_configurations` split the table
  into jobs and simulate one chunk.

In the configuration table ``micro_batch`` is a nullable integer: null stands for ``"auto"``,
resolved per row by :func:`trainscale.study_setup.resolve_micro_batch` when the chunk is
simulated (so a large sweep resolves in parallel jobs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from trainscale.calibration import Calibration
from trainscale.configs import build_configs
from trainscale.errors import ConfigurationError, InputFileError
from trainscale.model.shape import load_models
from trainscale.schema import CONFIGURATION_COLUMNS, MODEL_SHAPE_COLUMNS, Column, names
from trainscale.simulate import predict
from trainscale.study_setup import resolve_micro_batch
from trainscale.system.hardware import HardwareCatalog, load_hardware
from trainscale.yamlio import load_yaml

__all__ = [
    "AUTO",
    "REJECT_COLUMNS",
    "Filters",
    "Study",
    "chunk_count",
    "chunk_rows",
    "configuration_columns",
    "expand_study",
    "load_study",
    "simulate_configurations",
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

#: Columns of a study's rejects table after the configuration columns it gives.
REJECT_COLUMNS: tuple[Column, ...] = (
    Column(name="row", dtype="int64", unit="1", description="0-based row of the study's grid"),
    Column(
        name="column",
        dtype="string",
        unit="1",
        description="configuration column at fault, or the study key (derive.*, filters.*) "
        "that dropped the row",
    ),
    Column(name="reason", dtype="string", unit="1", description="why the row was dropped"),
)


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

    @property
    def grid_size(self) -> int:
        """Rows of the grid before derive and filters drop any (the product of sweep lengths)."""
        return math.prod(len(values) for values in self.sweep.values())

    def job_count(self, default_rows_per_job: int) -> int:
        """Simulate jobs for this study: ceil(grid rows / rows per job), at least 1."""
        return chunk_count(self.grid_size, self.rows_per_job or default_rows_per_job)


# --------------------------------------------------------------------------------------------
# Loading and checking


@cache
def _validator(schema_path: str) -> tuple[Draft202012Validator, dict[str, Any]]:
    schema = load_yaml(Path(schema_path))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema), schema


def _deref(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref``s; sibling keys (a ``description``) win over the target's."""
    while isinstance(node, dict) and str(node.get("$ref", "")).startswith("#/"):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _subschema(root: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
    node = _deref(root, root)
    for part in path:
        key = "items" if isinstance(part, int) else "properties"
        child = node.get(key, {})
        node = _deref(root, child if isinstance(part, int) else child.get(part, {}))
    return node


def _key(path: list[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _schema_problem(error: ValidationError, root: dict[str, Any]) -> tuple[str, str]:
    """``(key, message)`` for one schema violation, with what is allowed."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        key = _key([*path, unknown[0]]) if len(unknown) == 1 else _key(path)
        what = "unknown key" if len(unknown) == 1 else f"unknown keys {', '.join(unknown)}"
        return key, f"{what}; allowed: {', '.join(allowed)}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return _key([*path, missing]), "required key is missing"
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return _key(path), f"{error.instance!r} is not allowed; allowed: {allowed}"
    meaning = _subschema(root, path).get("description", "")
    message = error.message
    if error.validator in ("oneOf", "anyOf"):
        message = f"{error.instance!r} is not allowed"
    return _key(path), f"{message} ({' '.join(meaning.split())})" if meaning else message


def _catalogue_problems(
    fixed: Mapping[str, Any], sweep: Mapping[str, list[Any]], hardware: HardwareCatalog
) -> list[tuple[str, str]]:
    valid = {
        "gpu": ("GPU", sorted(hardware.gpus)),
        "model": ("model", sorted(load_models())),
    }
    problems = []
    for column, (kind, allowed) in valid.items():
        places = [(f"fixed.{column}", fixed[column])] if column in fixed else []
        places += [(f"sweep.{column}[{i}]", v) for i, v in enumerate(sweep.get(column, []))]
        for key, value in places:
            if value not in allowed and not (column == "model" and value == ""):
                problems.append((key, f"unknown {kind} {value!r}; valid: {', '.join(allowed)}"))
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
    path: str | Path, *, schema: str | Path, hardware: HardwareCatalog | None = None
) -> Study:
    """Read and check one study file; return the :class:`Study`.

    Parameters
    ----------
    path
        ``config/studies/<name>.yaml``; the name is the file name without ``.yaml``.
    schema
        ``workflow/schemas/study.schema.yaml`` (JSON Schema 2020-12).
    hardware
        GPU catalogue for the name check; default ``data/hardware.yaml``.

    Raises
    ------
    trainscale.errors.InputFileError
        Naming the file, then one line per problem with the key (``fixed.gpu``,
        ``sweep.num_gpus[2]``) and what is allowed (for GPUs and models: the valid names).
    """
    path = Path(path)
    data = load_yaml(path)
    validator, root = _validator(str(Path(schema).resolve()))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    problems = [_schema_problem(error, root) for error in errors]
    if not problems:
        fixed, sweep = data["fixed"], data.get("sweep", {})
        derive = data.get("derive", {})
        problems = _catalogue_problems(fixed, sweep, hardware or load_hardware())
        problems += _completeness_problems(fixed, sweep, derive)
    if problems:
        lines = [f"key '{key}': {message}" for key, message in problems]
        raise InputFileError(
            path, lines[0] if len(lines) == 1 else "invalid study:\n  " + "\n  ".join(lines)
        )
    return Study(
        name=path.stem,
        path=str(path),
        description=data["description"],
        fixed=dict(data["fixed"]),
        sweep={key: list(values) for key, values in data.get("sweep", {}).items()},
        derive=dict(data.get("derive", {})),
        filters=Filters(**data.get("filters", {})),
        rows_per_job=data.get("rows_per_job"),
    )


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


def _grid(study: Study) -> pd.DataFrame:
    """The cartesian product of the sweep axes (last axis fastest) plus the fixed values."""
    sizes = [len(values) for values in study.sweep.values()]
    index = np.indices(sizes).reshape(len(sizes), -1) if sizes else np.zeros((0, 1), int)
    rows = index.shape[1]
    raw: dict[str, np.ndarray] = {}
    for key, value in study.fixed.items():
        raw[key] = np.full(rows, value, dtype=object)
    for axis, (key, values) in enumerate(study.sweep.items()):
        raw[key] = np.array(values, dtype=object)[index[axis]]
    if study.derive:
        raw["global_batch"] = np.zeros(rows, dtype=object)
    return pd.DataFrame(
        {c.name: _typed(raw[c.name], c) for c in configuration_columns(study)},
        index=pd.RangeIndex(rows),
    )


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
        model_parallel = tp * pp * cp
        ok = num_gpus % model_parallel == 0
        grid["global_batch"] = pd.array(
            np.where(ok, value * (num_gpus // model_parallel), 0), dtype="Int64"
        )
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
        default = grid["gpu"].map(lambda g: hardware.system_for(g).gpus_per_node)
        per_node = _int_column(grid, "gpus_per_node", 0)
        per_node = np.where(per_node > 0, per_node, default.to_numpy(dtype=np.int64))
        problems += [
            (int(r), "filters.max_tp_per_node",
             f"tp {tp[r]} exceeds the {per_node[r]} GPUs per node (tensor parallelism would "
             "span nodes)")
            for r in candidates[tp[candidates] > per_node[candidates]]
        ]  # fmt: skip
    return problems


def expand_study(
    study: Study, *, hardware: HardwareCatalog | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Expand a study into ``(configurations, rejects)``.

    ``configurations`` has one row per kept grid row (grid order) and the columns of
    :func:`configuration_columns`; ``micro_batch`` null means ``"auto"``. ``rejects`` has the
    same columns for every dropped row plus :data:`REJECT_COLUMNS` (``row``, ``column``,
    ``reason``), one line per problem. Rows are dropped, in this order, by ``derive`` (derived
    value not a whole number), ``filters`` (``max_model_parallel``, ``max_tp_per_node``) and the
    simulator's validator (checked with ``micro_batch`` 1 for ``"auto"`` rows: the resolved
    value is a divisor of the local batch that passes the same checks).

    Raises
    ------
    trainscale.errors.ConfigurationError
        With ``filters.drop_invalid: false``, listing every row that ``derive`` or the validator
        rejects (row = position in the grid).
    """
    hardware = hardware or load_hardware()
    grid = _grid(study)
    invalid = _derive(study, grid)
    candidates = np.setdiff1d(np.arange(len(grid)), [r for r, _, _ in invalid])
    filtered = _filter(study, grid, candidates, hardware)
    candidates = np.setdiff1d(candidates, [r for r, _, _ in filtered])
    check = grid.iloc[candidates].reset_index(drop=True)
    if "micro_batch" in check.columns:
        check["micro_batch"] = check["micro_batch"].fillna(1)
    _, _, rejected = build_configs(check, origin=study.path, skip_invalid=True, hardware=hardware)
    invalid += [
        (int(candidates[row]), str(column), str(reason))
        for row, column, reason in rejected[["row", "column", "reason"]].itertuples(index=False)
    ]
    if invalid and not study.filters.drop_invalid:
        raise ConfigurationError(sorted(invalid, key=lambda p: p[0]), origin=study.path)
    problems = sorted(invalid + filtered, key=lambda p: p[0])
    dropped = {row for row, _, _ in problems}
    kept = [r for r in range(len(grid)) if r not in dropped]
    configurations = grid.iloc[kept].reset_index(drop=True)
    rejects = grid.iloc[[row for row, _, _ in problems]].reset_index(drop=True)
    rejects["row"] = pd.array([row for row, _, _ in problems], dtype="Int64")
    rejects["column"] = pd.array([column for _, column, _ in problems], dtype="string")
    rejects["reason"] = pd.array([reason for _, _, reason in problems], dtype="string")
    return configurations, rejects


# --------------------------------------------------------------------------------------------
# Chunks and simulation


def chunk_count(rows: int, rows_per_job: int) -> int:
    """Jobs for ``rows`` configurations at ``rows_per_job`` each: ceil(rows / rows_per_job) ≥ 1."""
    if rows_per_job < 1:
        raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job}")
    return max(1, math.ceil(rows / rows_per_job))


def chunk_rows(frame: pd.DataFrame, index: int, count: int) -> pd.DataFrame:
    """Rows of chunk ``index`` (0-based) of ``count`` near-equal, contiguous chunks.

    The chunk count is fixed before the grid is filtered (from the grid size), so chunks split
    the kept rows evenly and may be empty when a filter drops most of the grid.
    """
    if not 0 <= index < count:
        raise ValueError(f"chunk index {index} is outside 0..{count - 1}")
    positions = np.array_split(np.arange(len(frame)), count)[index]
    return frame.iloc[positions].reset_index(drop=True)


def simulate_configurations(
    configurations: pd.DataFrame, filters: Filters, *, calibration: Calibration | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate a (chunk of a) configuration table; return ``(results, dropped)``.

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
    results = predict(resolve_micro_batch(frame, calibration), calibration=calibration)
    if not filters.fits_memory:
        return results, results.iloc[0:0]
    fits = results["fits_memory"].to_numpy(dtype=bool)
    return results[fits].reset_index(drop=True), results[~fits].reset_index(drop=True)
