"""The run manifest (``data/runs/<run>/run.yaml``): read, check and hold it.

A run folder holds a manifest — configuration, cluster, the log files with their kind
(``workflow/schemas/run.schema.yaml``) — and the logs. :func:`load_manifest` reads it, checks it
against the JSON Schema through :mod:`trainscale.io.schema` (the messages every YAML input of the
project gives, with a wording of its own for a log path that leaves the run folder), then what a
schema cannot say (:mod:`trainscale.ingest.manifest_checks`), and returns a :class:`RunManifest`.
Every problem is reported together, each with the file, line and key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from trainscale.errors import InputFileError, clip
from trainscale.ingest.manifest_checks import ALL_OPTIONS, semantic_problems
from trainscale.io.schema import document_problems, raise_problems
from trainscale.io.yaml import compose, safe_load, yaml_error
from trainscale.paths import schema_file

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "LOG_KINDS",
    "MANIFEST_NAME",
    "POWER_KINDS",
    "STEP_KINDS",
    "LogEntry",
    "RunManifest",
    "load_manifest",
    "run_input_files",
    "schema_path",
    "validate_manifest",
]

STEP_KINDS = ("torchtitan", "megatron", "megatron_golden")
POWER_KINDS = ("nvidia_smi", "dcgmi")
LOG_KINDS = (*STEP_KINDS, *POWER_KINDS, "nccl_tests", "kineto_trace")
MANIFEST_NAME = "run.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One file listed under ``logs``."""

    path: Path
    """The file (run folder / the manifest's relative path)."""
    relpath: str
    """The path as written in the manifest, relative to the run folder."""
    kind: str
    """One of :data:`LOG_KINDS`."""
    job: str
    """The job the file belongs to (the run id for a single-job run)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Parser options given in the manifest (``columns``, ``start_time`` …)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunManifest:
    """A validated run manifest."""

    path: Path
    """The manifest file."""
    run_id: str
    description: str
    configuration: dict[str, Any]
    """Run-level configuration fields (configuration-table names)."""
    jobs: dict[str, dict[str, Any]]
    """Job name → {"description", "configuration"}; one job named ``run_id`` without ``jobs``."""
    cluster: dict[str, Any]
    logs: tuple[LogEntry, ...]
    warmup_steps: int
    """Logged steps dropped before the steady-state statistics."""
    trace_warmup_steps: int
    """Complete profiler steps dropped per rank."""
    origin: dict[str, Any] | None
    harness_timing: dict[str, Any] | None
    raw: dict[str, Any]
    """The manifest as loaded."""

    @property
    def run_dir(self) -> Path:
        """The run folder."""
        return self.path.parent

    def configuration_for(self, job: str) -> dict[str, Any]:
        """The run's configuration with the job's fields applied on top."""
        return {**self.configuration, **self.jobs[job].get("configuration", {})}


def schema_path() -> Path:
    """The run-manifest JSON Schema (``workflow/schemas/run.schema.yaml``; a wheel: its copy
    under ``trainscale/_data``)."""
    return schema_file("run")


def _wording(error: ValidationError) -> str | None:
    """The manifest's own message for a log path that would leave the run folder."""
    if error.validator == "pattern" and list(error.absolute_path)[-1:] == ["path"]:
        return (
            f"{clip(repr(error.instance))} must be a path relative to the run folder, without '..' "
            "or a leading '/'"
        )
    return None


def validate_manifest(data: object, path: str | Path, *, node: yaml.Node | None = None) -> None:
    """Check a loaded manifest against the JSON Schema.

    Parameters
    ----------
    data
        The manifest as loaded from YAML.
    path
        Its file, for messages.
    node
        The composed YAML node tree, to give line numbers.

    Raises
    ------
    InputFileError
        Listing every problem with its line (when known) and key, e.g.
        ``run.yaml:7: key 'configuration.tp': 0 is less than the minimum of 1 (…)``.
    """
    raise_problems(Path(path), document_problems(data, schema_path(), node, wording=_wording))


def _read_yaml(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(path, "no run manifest (run.yaml) here") from None
    except OSError as error:
        raise InputFileError(path, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputFileError(path, f"not UTF-8 text (byte {error.start})") from None
    try:
        node = compose(text)
        data = safe_load(text)
    except yaml.YAMLError as error:
        raise yaml_error(path, error) from None
    if not isinstance(data, dict):
        raise InputFileError(path, "expected a mapping (run_id, description, logs, …)", line=1)
    return data, node


def load_manifest(
    path: str | Path, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape]
) -> RunManifest:
    """Load and validate a run manifest (the file, or its run folder); its GPU and model names
    are checked against ``hardware`` and ``models`` (the caller's catalogues).

    Raises
    ------
    InputFileError
        Missing or invalid YAML; schema violations; ``run_id`` not the folder name; a log file
        missing; job names that do not match; unknown catalogue keys; parallel degrees or
        batches that do not divide. The message names the file, line and key of each problem.
    """
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    data, node = _read_yaml(path)
    validate_manifest(data, path, node=node)
    raise_problems(path, semantic_problems(data, path, node, (hardware, models)))
    run_id = data["run_id"]
    jobs = data.get("jobs") or {run_id: {"description": data["description"]}}
    logs = tuple(
        LogEntry(
            path=path.parent / entry["path"],
            relpath=entry["path"],
            kind=entry["kind"],
            job=entry.get("job", run_id),
            options={k: entry[k] for k in ALL_OPTIONS if k in entry},
        )
        for entry in data["logs"]
    )
    steady = data.get("steady_state", {})
    return RunManifest(
        path=path,
        run_id=run_id,
        description=data["description"],
        configuration=dict(data.get("configuration", {})),
        jobs={name: dict(job) for name, job in jobs.items()},
        cluster=dict(data.get("cluster", {})),
        logs=logs,
        warmup_steps=int(steady.get("warmup_steps", 1)),
        trace_warmup_steps=int(steady.get("trace_warmup_steps", 0)),
        origin=data.get("origin"),
        harness_timing=data.get("harness_timing"),
        raw=data,
    )


def run_input_files(run_dir: str | Path) -> list[str]:
    """The manifest and every log it lists, as paths (for Snakemake's ``input:``).

    Lenient: a manifest that cannot be read or is invalid gives just the manifest, so the
    ingest job itself runs and reports the problem in its log.
    """
    manifest = Path(run_dir) / MANIFEST_NAME
    try:
        data = safe_load(manifest.read_text(encoding="utf-8"))
        entries = data["logs"]
        logs = [os.path.join(run_dir, e["path"]) for e in entries if isinstance(e, dict)]
    except Exception:
        return [str(manifest)]
    return [str(manifest), *(p for p in logs if Path(p).is_file())]
