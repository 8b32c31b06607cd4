"""Reading and checking a study file: :func:`load_study` returns a
:class:`~trainscale.study.spec.Study`.

A study file holds ``description``, ``fixed`` (configuration column -> value), ``sweep``
(configuration column -> list of values), and optionally ``derive``, ``filters``,
``rows_per_job``, ``calibration`` and ``report``. The format is the JSON Schema
``workflow/schemas/study.schema.yaml``. Beside the schema, the checks here name every problem of
a file at once: GPU and model names unknown to the catalogues, numbers that are not finite,
columns given twice or missing, a ``calibration:`` file or measurement path that does not exist,
and (through :func:`trainscale.study.limits.product_problems`) grid products out of bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainscale.errors import InputFileError, clip
from trainscale.io.schema import schema_problems, subschema, validator
from trainscale.io.yaml import load_yaml
from trainscale.schema import MODEL_SHAPE_COLUMNS, names
from trainscale.sim.model.shape import ModelShape
from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.limits import product_problems
from trainscale.study.spec import Filters, Study

__all__ = ["load_study"]

#: Columns the simulator cannot do without (besides ``model`` or all shape columns).
_REQUIRED = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip
_SHAPE = tuple(names(MODEL_SHAPE_COLUMNS))


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


#: Most problems of one study listed in its error message.
MAX_LISTED = 50


def load_study(
    path: str | Path,
    *,
    schema: str | Path,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> Study:
    """Read and check one study file; return the :class:`~trainscale.study.spec.Study`.

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
        lines = [
            f"key '{clip(key)}': {clip(message, 400)}" for key, message in problems[:MAX_LISTED]
        ]
        if len(problems) > MAX_LISTED:
            lines.append(f"... and {len(problems) - MAX_LISTED} more problem(s)")
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
        bill=dict(data.get("bill", {})),
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
    from trainscale.sim.calibration import load_calibration, named_frameworks

    if not Path(calibration).is_file():
        return [
            (
                "calibration",
                f"no such file {calibration!r} (relative to the working "
                "directory; write one with trainscale calibrate --measurements FILE -o PATH)",
            )
        ]
    try:
        load_calibration(calibration, frameworks=named_frameworks(calibration))
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
