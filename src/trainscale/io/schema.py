"""JSON Schema checks of the YAML inputs, with messages that name the file, line, key and what is
allowed.

A study file (:func:`trainscale.study.load.load_study`) and each catalogue
(``data/hardware.yaml``, ``models.yaml``, ``frameworks.yaml``, ``nccl.yaml``, loaded by
:mod:`trainscale.sim.catalogue`) are checked against their schema in ``workflow/schemas/``
(JSON Schema 2020-12). :func:`schema_problems` turns every violation into ``(key, message)``:
an unknown key lists the allowed ones, a value outside an ``enum`` lists the allowed values,
anything else gives the validator's message with the schema's ``description`` of the key.
:func:`check_document` raises one :class:`~trainscale.errors.InputFileError` for all of them,
each with its line in the file. A loader that checks more than the schema can (the run manifest,
:mod:`trainscale.ingest.manifest`) takes the same steps apart: :func:`document_problems` (with a
``wording`` hook for its own messages), its own ``(line, key, message)`` problems found with
:func:`line_of` and :func:`key_text`, and :func:`raise_problems`, so that every message reads
the same.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from trainscale.errors import InputFileError, clip
from trainscale.io.yaml import compose, load_yaml

__all__ = [
    "Problem",
    "check_document",
    "document_problems",
    "key_text",
    "line_of",
    "raise_problems",
    "schema_problems",
    "subschema",
    "validator",
]

#: One problem of a YAML document: (1-based line or None, key as :func:`key_text` writes it,
#: message).
Problem = tuple[int | None, str, str]
#: A message of the caller's own for a violation, or None for the usual one.
Wording = Callable[[ValidationError], str | None]


@cache
def validator(schema_path: str) -> tuple[Draft202012Validator, dict[str, Any]]:
    """The (cached) validator of a schema file, and the schema itself.

    The schema files are the workflow's own (workflow/schemas), not input: the tests check each
    against the Draft 2020-12 meta-schema (tests/io/test_schema_files.py), as the workflow's
    code is checked, instead of every process (a job, a command) checking it again (0.01-0.12 s
    each); Snakemake's ``snakemake.utils.validate`` builds its validator the same way."""
    schema = load_yaml(Path(schema_path))
    return Draft202012Validator(schema), schema


def _deref(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref``s; sibling keys (a ``description``) win over the target's."""
    while isinstance(node, dict) and str(node.get("$ref", "")).startswith("#/"):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def subschema(root: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
    """The schema of the value at ``path`` (``properties``, ``additionalProperties`` and
    ``items`` followed, local ``$ref``s resolved); ``{}`` where the schema says nothing."""
    node = _deref(root, root)
    for part in path:
        if isinstance(part, int):
            child = node.get("items", {})
        else:
            properties = node.get("properties", {})
            child = properties[part] if part in properties else node.get("additionalProperties")
        node = _deref(root, child if isinstance(child, dict) else {})
    return node


def key_text(path: list[str | int]) -> str:
    """``fixed.gpu``, ``sweep.num_gpus[2]``; ``(top level)`` for the document itself."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _problem(error: ValidationError, root: dict[str, Any]) -> tuple[list[str | int], str]:
    """``(path, message)`` for one schema violation, with what is allowed."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = [*path, unknown[0]] if len(unknown) == 1 else path
        what = "unknown key" if len(unknown) == 1 else f"unknown keys {', '.join(unknown)}"
        return where, f"{what}; allowed: {', '.join(allowed)}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return [*path, missing], "required key is missing"
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return path, f"{clip(repr(error.instance))} is not allowed; allowed: {allowed}"
    meaning = subschema(root, path).get("description", "")
    message = error.message
    if error.validator in ("oneOf", "anyOf"):
        message = f"{clip(repr(error.instance))} is not allowed"
    return path, f"{message} ({' '.join(meaning.split())})" if meaning else message


def _sorted_errors(data: object, schema: str | Path) -> tuple[list[ValidationError], dict]:
    check, root = validator(str(Path(schema).resolve()))
    errors = sorted(check.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return errors, root


def schema_problems(data: object, schema: str | Path) -> list[tuple[str, str]]:
    """Every violation of ``schema`` (a schema file) by ``data``, as ``(key, message)``."""
    errors, root = _sorted_errors(data, schema)
    return [
        (clip(key_text(path)), clip(message, 400))
        for path, message in (_problem(e, root) for e in errors)
    ]


def line_of(node: yaml.Node | None, path: list[str | int]) -> int | None:
    """1-based line of the YAML node at ``path`` (or of its deepest existing ancestor)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in path:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    line, node = key_node.start_mark.line + 1, value_node
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _located(
    errors: list[ValidationError], root: dict, node: yaml.Node | None, wording: Wording | None
) -> list[Problem]:
    problems = []
    for error in errors:
        where, message = _problem(error, root)
        own = wording(error) if wording is not None else None
        problems.append((line_of(node, where), clip(key_text(where)), clip(own or message, 400)))
    return problems


def document_problems(
    data: object, schema: str | Path, node: yaml.Node | None, *, wording: Wording | None = None
) -> list[Problem]:
    """Every violation of the schema file ``schema`` by ``data`` as ``(line, key, message)``.

    ``node`` is ``data``'s composed YAML (``yaml.compose``), for the lines (None: unknown);
    ``wording`` may give a message of its own for a violation (None keeps the usual one).
    """
    errors, root = _sorted_errors(data, schema)
    return _located(errors, root, node, wording)


def raise_problems(path: str | Path, problems: list[Problem]) -> None:
    """Raise one :class:`~trainscale.errors.InputFileError` for the file ``path`` listing every
    problem by line, then key (nothing when there are none)."""
    if not problems:
        return
    problems = sorted(problems, key=lambda p: (p[0] or 0, p[1]))
    if len(problems) == 1:
        line, key, message = problems[0]
        raise InputFileError(path, f"key '{key}': {message}", line=line)
    lines = [f"{len(problems)} problems:"]
    lines += [
        f"  line {line or '?'}, key '{key}': {message}" for line, key, message in problems[:50]
    ]
    lines += [f"  ... and {len(problems) - 50} more"] if len(problems) > 50 else []
    raise InputFileError(path, "\n".join(lines), line=problems[0][0])


def check_document(data: object, path: str | Path, schema: str | Path) -> None:
    """Check ``data``, loaded from the YAML file ``path``, against the schema file ``schema``.

    Raises
    ------
    trainscale.errors.InputFileError
        Naming the file and, for every violation, its line, key and what is allowed, e.g.
        ``data/hardware.yaml:91: key 'systems.dgx-h100.fabric': 'infiniband2' is not allowed;
        allowed: infiniband, roce, efa, ethernet, slingshot``.
    """
    errors, root = _sorted_errors(data, schema)
    if not errors:
        return
    try:
        node = compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        node = None
    raise_problems(path, _located(errors, root, node, None))
