"""Real runs: the run manifest (``data/runs/<run>/run.yaml``) and its ingestion into the dataset.

A run folder holds a manifest — configuration, cluster, the log files with their kind
(``workflow/schemas/run.schema.yaml``) — and the logs. :func:`ingest_run` reads every log with
the parsers of :mod:`trainscale.ingest` and returns

- **results**: one row per job (a run is one job unless its manifest declares ``jobs``) in the
  dataset schema (:data:`trainscale.schema.DATASET_COLUMNS`), ``source = "measured"``;
- **steps**: one row per logged step, units in the column names.

How each result column is measured:

- steady state: the first ``steady_state.warmup_steps`` logged steps are dropped; every
  per-step metric is summarised by its median (:func:`trainscale.ingest.steady.steady_state`),
  ``step_time_s_iqr`` is the interquartile range of step time;
- ``tokens_per_s_per_gpu``: the median logged per-GPU rate (torchtitan ``tps``, Megatron-
  DeepSpeed ``tgs`` …) where the log has one, ``tokens_per_s`` = that × ``num_gpus``; otherwise
  ``tokens_per_s`` = ``global_batch × seq_len / step_time_s``;
- ``mfu`` / ``hfu``: the schema's definition (model FLOPs per token × tokens/s ÷ (num_gpus ×
  dense peak of the precision), :mod:`trainscale.sim.model.flops`) when the shape, sequence length
  and a catalogue GPU are known; else the log's own median MFU when positive; else null;
- ``power_w_per_gpu``: power-log samples averaged per GPU over each step's interval (previous
  step line's timestamp to this one's, :func:`trainscale.ingest.power.align_power_to_steps`),
  averaged over GPUs, median over the steady steps; Megatron's own ``power per GPU`` field when
  the run has no power log; ``energy_j_per_token`` = power × num_gpus ÷ tokens_per_s;
- ``compute_s``, ``comm_s``, per-collective ``*_s``, ``exposed_comm_s`` from Kineto traces by
  HolisticTraceAnalysis's algorithm (:mod:`trainscale.ingest.hta`): per rank the median over
  complete profiler steps, then the mean over ranks (seconds per step). A run with traces but no
  step log takes ``step_time_s`` from the profiler steps' CPU spans.

The GPU and model catalogues (names checked, peaks, TDPs and shapes) are the caller's
(``hardware`` and ``models`` of :mod:`trainscale.sim.catalogue`).

Problems are :class:`~trainscale.errors.InputFileError` naming the file and the key or line. A
garbled step line is skipped with a warning naming file and line; in ``strict`` mode, and
always for a harness run whose log ends before the steps its manifest says it ran, it is an
error. Nothing is returned (or written, by :func:`write_ingested`) unless every log was read.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import yaml

from trainscale.errors import InputFileError, TrainscaleError
from trainscale.io.yaml import safe_load, yaml_error
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    STEP_TABLE_COLUMNS,
    names,
)
from trainscale.sim.degrees import data_parallel_degree

if TYPE_CHECKING:
    from trainscale.ingest.steplog import StepLog
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

    #: The parts of the catalogue a run is checked and ingested with: (hardware, models).
    _Catalogues = tuple[HardwareCatalog, Mapping[str, ModelShape]]

__all__ = [
    "LOG_KINDS",
    "POWER_KINDS",
    "STEP_KINDS",
    "LogEntry",
    "RunManifest",
    "ingest_run",
    "load_manifest",
    "run_input_files",
    "schema_path",
    "validate_manifest",
    "write_ingested",
]

STEP_KINDS = ("torchtitan", "megatron", "megatron_golden")
POWER_KINDS = ("nvidia_smi", "dcgmi")
LOG_KINDS = (*STEP_KINDS, *POWER_KINDS, "nccl_tests", "kineto_trace")
MANIFEST_NAME = "run.yaml"

_SCHEMA_NAME = "run.schema.yaml"
_SCHEMA_LOCATIONS = (
    Path(__file__).resolve().parents[3] / "workflow" / "schemas" / _SCHEMA_NAME,
    Path(__file__).resolve().parents[1] / "_data" / _SCHEMA_NAME,
)
_CONFIG_NAMES = tuple(c.name for c in CONFIGURATION_COLUMNS)
_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp")
_OPTIONS_BY_KIND = {
    "nvidia_smi": ("columns", "gpus_per_poll"),
    "dcgmi": ("start_time", "interval_s"),
}
_ALL_OPTIONS = ("columns", "gpus_per_poll", "start_time", "interval_s")
#: Trace collective name → result column (seconds per step).
_COLLECTIVE_COLUMNS = {
    "allgather": "allgather_s",
    "reducescatter": "reducescatter_s",
    "allreduce": "allreduce_s",
    "sendrecv": "p2p_s",
    "send": "p2p_s",
    "recv": "p2p_s",
}


# --------------------------------------------------------------------------------------------
# The manifest


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
    """The run-manifest JSON Schema (``workflow/schemas/run.schema.yaml``)."""
    for location in _SCHEMA_LOCATIONS:
        if location.is_file():
            return location
    raise TrainscaleError(
        f"the run-manifest schema {_SCHEMA_NAME} is missing (looked in "
        f"{', '.join(str(p) for p in _SCHEMA_LOCATIONS)})"
    )


@cache
def _validator():  # type: ignore[no-untyped-def]
    from jsonschema import Draft202012Validator

    schema = yaml.safe_load(schema_path().read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _key(path: Sequence[object]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "top level"


def _line_of(node: yaml.Node | None, path: Sequence[object]) -> int | None:
    """1-based line of the YAML node at ``path`` (or of its deepest existing ancestor)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in path:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == part:
                    line, node = key_node.start_mark.line + 1, value_node
                    break
            else:
                return line
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _message(error: Any) -> str:
    """A jsonschema error in words; unexpected keys are named with the allowed ones."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        if extra and allowed:
            return f"unknown key(s) {', '.join(map(repr, extra))}; allowed: {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(repr, error.validator_value))}"
    if error.validator == "pattern" and list(error.absolute_path)[-1:] == ["path"]:
        return (
            f"{error.instance!r} must be a path relative to the run folder, without '..' "
            "or a leading '/'"
        )
    return error.message


def _raise_problems(path: Path, problems: list[tuple[int | None, str, str]]) -> None:
    """Raise one :class:`InputFileError` listing every (line, key, message)."""
    if not problems:
        return
    problems = sorted(problems, key=lambda p: (p[0] or 0, p[1]))
    if len(problems) == 1:
        line, key, message = problems[0]
        raise InputFileError(path, f"{key}: {message}", line=line)
    lines = [f"{len(problems)} problems:"]
    lines += [f"  line {line or '?'}, {key}: {message}" for line, key, message in problems]
    raise InputFileError(path, "\n".join(lines), line=problems[0][0])


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
        ``run.yaml:7: configuration.tp: 0 is less than the minimum of 1``.
    """
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    problems = [
        (_line_of(node, list(e.absolute_path)), _key(list(e.absolute_path)), _message(e))
        for e in errors
    ]
    _raise_problems(Path(path), problems)


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
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = safe_load(text)
    except yaml.YAMLError as error:
        raise yaml_error(path, error) from None
    if not isinstance(data, dict):
        raise InputFileError(path, "expected a mapping (run_id, description, logs, …)", line=1)
    return data, node


def _semantic_problems(
    data: dict[str, Any], path: Path, node: yaml.Node | None, catalogue: _Catalogues
) -> list[tuple[int | None, str, str]]:
    """What the schema cannot check: folder name, files, jobs, catalogue keys, plan factors."""
    problems: list[tuple[int | None, str, str]] = []

    def add(key_path: list[object], message: str) -> None:
        problems.append((_line_of(node, key_path), _key(key_path), message))

    run_dir = path.parent
    if data["run_id"] != run_dir.name:
        add(["run_id"], f"{data['run_id']!r} must be the run folder's name {run_dir.name!r}")
    jobs = data.get("jobs")
    for i, entry in enumerate(data["logs"]):
        file = run_dir / entry["path"]
        if not file.is_file():
            add(["logs", i, "path"], f"no such file {entry['path']!r} in {run_dir}")
        for option in _ALL_OPTIONS:
            if option in entry and option not in _OPTIONS_BY_KIND.get(entry["kind"], ()):
                add(
                    ["logs", i, option],
                    f"only for kind(s) "
                    f"{', '.join(k for k, v in _OPTIONS_BY_KIND.items() if option in v)}, "
                    f"not {entry['kind']}",
                )
        if jobs is None and "job" in entry:
            add(["logs", i, "job"], "names a job but the manifest has no 'jobs'")
        elif jobs is not None and entry.get("job") not in jobs:
            add(
                ["logs", i, "job"] if "job" in entry else ["logs", i],
                f"must name one of the jobs {', '.join(sorted(jobs))}",
            )
    if jobs is not None:
        used = {entry.get("job") for entry in data["logs"]}
        for name in sorted(set(jobs) - used):
            add(["jobs", name], "no log file names this job")
    configurations = [(["configuration"], data.get("configuration", {}))]
    if jobs:
        configurations += [
            (
                ["jobs", name, "configuration"],
                {**data.get("configuration", {}), **job.get("configuration", {})},
            )
            for name, job in jobs.items()
        ]
    for where, configuration in configurations:
        for key_path, message in _configuration_problems(configuration, catalogue):
            add([*where, *key_path], message)
    return problems


def _configuration_problems(
    cfg: dict[str, Any], catalogue: _Catalogues
) -> list[tuple[list[object], str]]:
    problems: list[tuple[list[object], str]] = []
    hardware, models = catalogue
    if "model" in cfg and cfg["model"] not in models:
        problems.append(
            (
                ["model"],
                f"{cfg['model']!r} is not in the model catalogue "
                f"(data/models.yaml): {', '.join(sorted(models))}",
            )
        )
    gpus = hardware.gpus
    if "gpu" in cfg and cfg["gpu"] != "cpu" and cfg["gpu"] not in gpus:
        problems.append(
            (
                ["gpu"],
                f"{cfg['gpu']!r} is neither 'cpu' nor a GPU of the hardware "
                f"catalogue (data/hardware.yaml): {', '.join(sorted(gpus))}",
            )
        )
    shape = _resolved_shape(cfg, models)
    if shape.get("hidden") and shape.get("heads") and shape["hidden"] % shape["heads"]:
        problems.append(
            (["hidden"], f"hidden {shape['hidden']} is not divisible by heads {shape['heads']}")
        )
    if shape.get("heads") and shape.get("kv_heads") and shape["heads"] % shape["kv_heads"]:
        problems.append(
            (
                ["kv_heads"],
                f"heads {shape['heads']} is not divisible by kv_heads {shape['kv_heads']}",
            )
        )
    degrees = [cfg.get(k, 1) for k in ("tp", "pp", "cp")]
    if "num_gpus" in cfg and cfg["num_gpus"] % math.prod(degrees):
        problems.append(
            (
                ["num_gpus"],
                f"num_gpus {cfg['num_gpus']} is not divisible by tp·pp·cp"
                f" = {degrees[0]}·{degrees[1]}·{degrees[2]}",
            )
        )
    elif all(k in cfg for k in ("num_gpus", "global_batch", "micro_batch")):
        dp = data_parallel_degree(cfg["num_gpus"], *degrees)
        if cfg["global_batch"] % (dp * cfg["micro_batch"]):
            problems.append(
                (
                    ["global_batch"],
                    f"global_batch {cfg['global_batch']} is not a "
                    f"multiple of dp·micro_batch = {dp}·{cfg['micro_batch']}",
                )
            )
    return problems


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
    _raise_problems(path, _semantic_problems(data, path, node, (hardware, models)))
    run_id = data["run_id"]
    jobs = data.get("jobs") or {run_id: {"description": data["description"]}}
    logs = tuple(
        LogEntry(
            path=path.parent / entry["path"],
            relpath=entry["path"],
            kind=entry["kind"],
            job=entry.get("job", run_id),
            options={k: entry[k] for k in _ALL_OPTIONS if k in entry},
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
        data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
        entries = data["logs"]
        logs = [os.path.join(run_dir, e["path"]) for e in entries if isinstance(e, dict)]
    except Exception:
        return [str(manifest)]
    return [str(manifest), *(p for p in logs if Path(p).is_file())]


# --------------------------------------------------------------------------------------------
# Ingestion


def _resolved_shape(cfg: dict[str, Any], models: Mapping[str, ModelShape]) -> dict[str, Any]:
    """Shape fields: the catalogue model's, overridden by explicit fields."""
    shape: dict[str, Any] = {}
    model = models.get(cfg.get("model", ""))
    if model is not None:
        shape = {name: getattr(model, name) for name in _SHAPE}
    shape.update({k: cfg[k] for k in _SHAPE if k in cfg})
    return shape


def _flops_per_token(
    cfg: dict[str, Any], models: Mapping[str, ModelShape], *, hardware: bool
) -> float | None:
    """Model (or hardware) FLOPs per token, or None when the shape or seq_len is unknown."""
    from trainscale.schema import RECOMPUTE_MODES
    from trainscale.sim.model.flops import hardware_flops_per_token, model_flops_per_token
    from trainscale.sim.model.params import TransformerShape

    shape = _resolved_shape(cfg, models)
    if any(k not in shape for k in _SHAPE) or "seq_len" not in cfg:
        return None
    transformer = TransformerShape(
        shape["layers"], shape["hidden"], shape["heads"], shape["kv_heads"], shape["ffn"],
        shape["vocab"], shape["mlp"] == "swiglu",
    )  # fmt: skip
    if not hardware:
        return float(model_flops_per_token(transformer, cfg["seq_len"]))
    if "recompute" not in cfg:
        return None
    recompute = RECOMPUTE_MODES.index(cfg["recompute"])
    return float(hardware_flops_per_token(transformer, cfg["seq_len"], recompute))


def _peak_flops(cfg: dict[str, Any], hardware: HardwareCatalog) -> float | None:
    """Dense peak FLOP/s per GPU at the configured precision, or None."""
    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    if gpu is None:
        return None
    precision = cfg.get("precision", "bf16")
    if precision == "bf16":
        return gpu.bf16_flops_per_s
    if precision == "fp8":
        return gpu.fp8_flops_per_s
    return None


#: Power readings above the GPU's TDP (catalogue ``tdp_w``) by more than this fraction are an
#: error: nvidia-smi's ``power.draw`` averages over about a second and stays near the power
#: limit; 25 % allows short excursions and instantaneous readings, not a wrong unit or scale.
TDP_TOLERANCE = 0.25


def _warn(notes: list[str], message: str) -> None:
    """Print a warning (Python ``warnings``, i.e. stderr) and keep it for the ``warnings``
    column."""
    notes.append(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _strict_or_warn(message: TrainscaleError, strict: bool, notes: list[str]) -> None:
    """Raise ``message`` with ``strict``, else warn and keep it for the ``warnings`` column."""
    if strict:
        raise message
    _warn(notes, str(message))


def _read_step_log(
    entry: LogEntry, manifest: RunManifest, strict: bool, notes: list[str]
) -> StepLog:
    """Parse one step log; report skipped lines; check a harness log is complete."""
    from trainscale.ingest.steplog import parse_step_log

    log = parse_step_log(entry.path, format=entry.kind)  # type: ignore[arg-type]
    for note in log.warnings:
        _warn(notes, note)
    if log.skipped_lines:
        numbers = ", ".join(map(str, log.skipped_line_numbers[:10]))
        more = " …" if log.skipped_lines > 10 else ""
        _strict_or_warn(
            InputFileError(
                entry.path,
                f"{log.skipped_lines} garbled or truncated step line(s) skipped (line(s) "
                f"{numbers}{more}); the steady state uses the {len(log.steps)} complete ones",
                line=log.skipped_line_numbers[0],
            ),
            strict,
            notes,
        )
    timing = manifest.harness_timing
    if timing is not None and entry.kind == "torchtitan":
        expected = manifest.warmup_steps + int(timing["steps"])
        last = int(log.steps["step"].iloc[-1])
        if last < expected or len(log.steps) < expected:
            where = (
                log.skipped_line_numbers[-1]
                if log.skipped_lines
                else (int(log.steps["line"].iloc[-1]))
            )
            raise InputFileError(
                entry.path,
                f"truncated: the harness ran {expected} steps ({manifest.warmup_steps} warm-up "
                f"+ {timing['steps']} timed, {manifest.path.name} harness_timing) but the log "
                f"has {len(log.steps)} complete step line(s), the last for step {last}",
                line=where,
            )
    return log


def _power_frames(
    entries: list[LogEntry],
    cfg: dict[str, Any],
    notes: list[str],
    hardware: HardwareCatalog,
    checks: tuple[Path, bool],
) -> list[pd.DataFrame]:
    """Parse the job's power logs and check them (:mod:`trainscale.ingest.plausibility`);
    ``checks`` is (manifest path, strict)."""
    from trainscale.ingest.plausibility import check_power_coverage, check_power_samples
    from trainscale.ingest.power import parse_power_log

    manifest_path, strict = checks

    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    frames = []
    for entry in entries:
        fmt = "nvidia-smi" if entry.kind == "nvidia_smi" else "dcgmi"
        options = dict(entry.options)
        log = parse_power_log(entry.path, format=fmt, **options)  # type: ignore[arg-type]
        for note in log.warnings:
            _warn(notes, note)
        if log.skipped_lines:
            _warn(notes, f"{entry.path}: {log.skipped_lines} garbled power row(s) skipped")
        samples = log.samples
        if not samples["power_w"].notna().any():
            raise InputFileError(
                entry.path,
                "no power reading in any row (expected a power.draw [W] column, or POWER for "
                "dcgmi dmon)",
            )
        if gpu is not None:
            limit = gpu.tdp_w * (1 + TDP_TOLERANCE)
            high = np.flatnonzero((samples["power_w"] > limit).to_numpy(dtype=bool))
            if high.size:
                k = high[0]
                raise InputFileError(
                    entry.path,
                    f"power {samples['power_w'].iloc[k]:g} W is above what a {cfg['gpu']} can "
                    f"draw (TDP {gpu.tdp_w:g} W + {TDP_TOLERANCE:.0%}, data/hardware.yaml); "
                    "allowed: 0 to "
                    f"{limit:g} W",
                    line=int(samples["line"].iloc[k]),
                )
        for note in check_power_samples(samples, entry.path, gpu, str(cfg.get("gpu"))):
            _strict_or_warn(TrainscaleError(note), strict, notes)
        frames.append(samples.assign(log_file=str(entry.path)))
    for note in check_power_coverage(frames, cfg.get("num_gpus"), manifest_path):
        _strict_or_warn(TrainscaleError(note), strict, notes)
    return frames


def _step_power(
    power: list[pd.DataFrame], steps: pd.DataFrame, step_file: Path, warmup: int, notes: list[str]
) -> pd.Series:
    """Mean power per GPU during each step (index aligned with ``steps``), all power logs;
    a power log that misses the steady steps, or covers only some, is a warning."""
    from trainscale.ingest.power import align_power_to_steps

    total = pd.Series(0.0, index=steps.index)
    gpus = pd.Series(0.0, index=steps.index)
    steady = set(steps["step"].iloc[warmup:])
    for samples in power:
        aligned = align_power_to_steps(samples, steps)
        covered = set(aligned.loc[aligned["n_samples"] > 0, "step"]) & steady
        if len(covered) < len(steady):
            stamps = samples["timestamp"].dropna()
            span = f"{stamps.min()} to {stamps.max()}" if len(stamps) else "no timestamps"
            step_stamps = steps["timestamp"].iloc[warmup:].dropna()
            step_span = (
                f"{step_stamps.min()} to {step_stamps.max()}" if len(step_stamps) else "untimed"
            )
            what = "none" if not covered else f"{len(covered)}"
            _warn(
                notes,
                f"{samples['log_file'].iloc[0]}: power samples ({span}) cover {what} of the "
                f"{len(steady)} steady steps of {step_file} ({step_span}); their power is null",
            )
        per_gpu = aligned[[c for c in aligned.columns if c.startswith("power_w_gpu")]]
        by_step = dict(
            zip(
                aligned["step"],
                zip(per_gpu.sum(axis=1, min_count=1), per_gpu.notna().sum(axis=1), strict=True),
                strict=True,
            )
        )
        for i, step in zip(steps.index, steps["step"], strict=True):
            watts, count = by_step.get(step, (np.nan, 0))
            if count and not math.isnan(watts):
                total[i] += watts
                gpus[i] += count
    return (total / gpus).where(gpus > 0)


@dataclass(slots=True)
class _TraceSummary:
    step_time_s: float = np.nan
    compute_s: float = np.nan
    comm_s: float = np.nan
    exposed_comm_s: float = np.nan
    collectives: dict[str, float] = field(default_factory=dict)
    n_steps: int = 0
    has_gpu_kernels: bool = False


def _trace_summary(
    entries: list[LogEntry], warmup: int, cfg: dict[str, Any], manifest_path: Path
) -> _TraceSummary:
    from trainscale.ingest.hta import step_breakdown
    from trainscale.ingest.kineto import load_traces

    traces = load_traces([e.path for e in entries])  # raises for traces of different jobs
    num_gpus = cfg.get("num_gpus")
    for trace in traces:
        if num_gpus is not None and trace.world_size is not None and trace.world_size != num_gpus:
            raise InputFileError(
                trace.path,
                f"distributedInfo.world_size is {trace.world_size} but the run's num_gpus is "
                f"{num_gpus} ({manifest_path}): a trace from another job?",
            )
    breakdown = step_breakdown(traces)
    summary = _TraceSummary()
    spans = []
    for trace in traces:
        steps = trace.steps.sort_values("step").iloc[warmup:]
        spans.append(float(steps["dur_us"].median()) if len(steps) else np.nan)
    summary.step_time_s = (
        float(np.nanmedian(spans)) / 1e6 if not np.all(np.isnan(spans)) else (np.nan)
    )
    if breakdown.empty:
        return summary
    summary.has_gpu_kernels = True
    ordered = breakdown.sort_values(["rank", "step"], kind="stable")
    kept = ordered[ordered.groupby("rank").cumcount().to_numpy() >= warmup]
    if kept.empty:
        return summary
    summary.n_steps = int(kept.groupby("rank").size().max())
    per_rank = kept.groupby("rank").median(numeric_only=True)
    summary.compute_s = float(per_rank["comp_us"].mean()) / 1e6
    summary.comm_s = float(per_rank["comm_us"].mean()) / 1e6
    summary.exposed_comm_s = float(per_rank["exposed_comm_us"].mean()) / 1e6
    for name, column in _COLLECTIVE_COLUMNS.items():
        source = f"comm_{name}_us"
        if source in per_rank:
            value = float(per_rank[source].mean()) / 1e6
            summary.collectives[column] = summary.collectives.get(column, 0.0) + value
    return summary


def _median(values: pd.Series) -> float:
    data = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    data = data[~np.isnan(data)]
    return float(np.median(data)) if data.size else np.nan


def _ingest_job(
    manifest: RunManifest, job: str, strict: bool, catalogue: _Catalogues
) -> tuple[dict[str, Any], pd.DataFrame]:
    from trainscale.ingest.nccltests import parse_nccl_tests
    from trainscale.ingest.plausibility import check_result_row, check_steps
    from trainscale.ingest.steady import steady_state

    hardware, models = catalogue
    cfg = manifest.configuration_for(job)
    entries = [e for e in manifest.logs if e.job == job]
    step_entries = [e for e in entries if e.kind in STEP_KINDS]
    power_entries = [e for e in entries if e.kind in POWER_KINDS]
    trace_entries = [e for e in entries if e.kind == "kineto_trace"]
    for entry in entries:
        if entry.kind == "nccl_tests":
            parse_nccl_tests(entry.path)  # checked; nccl-tests results are not step metrics

    notes: list[str] = []
    step_logs = [_read_step_log(e, manifest, strict, notes) for e in step_entries]
    power = _power_frames(power_entries, cfg, notes, hardware, (manifest.path, strict))
    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    trace = (
        _trace_summary(trace_entries, manifest.trace_warmup_steps, cfg, manifest.path)
        if trace_entries
        else None
    )

    row: dict[str, Any] = {name: cfg.get(name) for name in _CONFIG_NAMES}
    num_gpus = cfg.get("num_gpus")
    tokens_per_step = (
        cfg["global_batch"] * cfg["seq_len"] if "global_batch" in cfg and "seq_len" in cfg else None
    )
    step_tables = []
    for entry, log in zip(step_entries, step_logs, strict=True):
        table = log.steps.copy()
        table.insert(0, "run_id", manifest.run_id)
        table.insert(1, "job", job)
        table.insert(2, "log_file", entry.relpath)
        table["warmup"] = np.arange(len(table)) < manifest.warmup_steps
        # The harness prints "mfu: 0.00%" when it knows no peak FLOP/s (CPU): unknown, not 0.
        # Elsewhere an MFU of exactly 0 with work done cannot be a measurement either.
        peak_unknown = manifest.harness_timing is not None and (
            manifest.harness_timing.get("peak_tflops_per_device") is None
        )
        table["mfu"] = table["mfu"].mask(
            peak_unknown | ((table["mfu"] == 0) & (table["tflops_per_gpu"] > 0))
        )
        check_steps(log.steps, entry.path, cfg, manifest.warmup_steps, gpu, manifest.path)
        if "global_batch" in cfg:
            table["global_batch"] = table["global_batch"].fillna(cfg["global_batch"])
        step_tables.append(table)
    used_files = []
    if step_logs:
        primary, table = step_logs[0], step_tables[0]
        if power:
            table["power_w_per_gpu"] = _step_power(
                power, table, step_entries[0].path, manifest.warmup_steps, notes
            ).to_numpy()
        state = steady_state(primary, warmup_steps=manifest.warmup_steps)
        kept = table.iloc[manifest.warmup_steps :]
        used_files.append(step_entries[0].relpath)
        row["step_time_s"] = state.step_time_s
        row["step_time_s_iqr"] = state.step_time_s_iqr
        row["n_steps"] = state.n_steps
        row["line_range"] = (
            f"{state.first_line}-{state.last_line}"
            if state.first_line is not None
            else f"steps {state.first_step}-{state.last_step}"
        )
        per_gpu = state.tokens_per_s_per_gpu
        if not math.isnan(per_gpu):
            row["tokens_per_s_per_gpu"] = per_gpu
            row["tokens_per_s"] = per_gpu * num_gpus if num_gpus else np.nan
        elif tokens_per_step and not math.isnan(state.step_time_s):
            row["tokens_per_s"] = tokens_per_step / state.step_time_s
            row["tokens_per_s_per_gpu"] = row["tokens_per_s"] / num_gpus if num_gpus else np.nan
        row["mem_gib_per_gpu"] = state.mem_gib
        row["power_w_per_gpu"] = _median(kept["power_w_per_gpu"])
        row["fits_memory"] = True
        logged_mfu = state.mfu
        energy_per_step = _median(kept["energy_j_per_gpu"])
    else:
        logged_mfu, energy_per_step = np.nan, np.nan
        if power:
            samples = pd.concat(power, ignore_index=True)
            row["power_w_per_gpu"] = float(samples.groupby("gpu_index")["power_w"].mean().mean())

    if trace is not None:
        used_files += [e.relpath for e in trace_entries]
        if trace.has_gpu_kernels:
            row.update(
                compute_s=trace.compute_s, comm_s=trace.comm_s, exposed_comm_s=trace.exposed_comm_s
            )
            for column in set(_COLLECTIVE_COLUMNS.values()):
                row[column] = trace.collectives.get(column, 0.0)
        if not step_logs:
            row["step_time_s"] = trace.step_time_s
            row["n_steps"] = trace.n_steps or None
            if tokens_per_step and trace.step_time_s > 0:
                row["tokens_per_s"] = tokens_per_step / trace.step_time_s
                row["tokens_per_s_per_gpu"] = (
                    row["tokens_per_s"] / num_gpus if num_gpus else (np.nan)
                )
    used_files += [e.relpath for e in power_entries]

    tokens_per_s = row.get("tokens_per_s", np.nan)
    tokens_per_s = np.nan if tokens_per_s is None else tokens_per_s
    peak = _peak_flops(cfg, hardware)
    flops = _flops_per_token(cfg, models, hardware=False)
    if flops and peak and num_gpus and tokens_per_s > 0:
        row["mfu"] = flops * tokens_per_s / (num_gpus * peak)
        hardware_flops = _flops_per_token(cfg, models, hardware=True)
        if hardware_flops:
            row["hfu"] = hardware_flops * tokens_per_s / (num_gpus * peak)
    elif logged_mfu > 0:
        row["mfu"] = logged_mfu
    power_w = row.get("power_w_per_gpu")
    if power_w is not None and not math.isnan(power_w) and num_gpus and tokens_per_s > 0:
        row["energy_j_per_token"] = power_w * num_gpus / tokens_per_s
    elif not math.isnan(energy_per_step) and num_gpus and tokens_per_step:
        row["energy_j_per_token"] = energy_per_step * num_gpus / tokens_per_step
    exposed, step_time = row.get("exposed_comm_s"), row.get("step_time_s")
    if exposed is not None and step_time and not math.isnan(exposed):
        row["exposed_comm_frac"] = exposed / step_time
    if num_gpus and all(cfg.get(k) for k in ("tp", "pp")):
        row["dp"] = data_parallel_degree(num_gpus, cfg["tp"], cfg["pp"], cfg.get("cp", 1))
        if row["dp"] and "global_batch" in cfg and "micro_batch" in cfg:
            row["grad_accum"] = cfg["global_batch"] // (row["dp"] * cfg["micro_batch"])
    for note in check_result_row(row, cfg, gpu, manifest.path):
        _strict_or_warn(TrainscaleError(note), strict, notes)
    row.update(
        source="measured",
        study="runs",
        run_id=manifest.run_id,
        log_file=";".join(used_files),
        warnings="; ".join(notes),
    )
    steps = (
        pd.concat(step_tables, ignore_index=True)
        if step_tables
        else pd.DataFrame(columns=names(STEP_TABLE_COLUMNS))
    )
    return row, steps


def _config_ids(results: pd.DataFrame, manifest: RunManifest) -> list[str]:
    """:func:`trainscale.io.parquet.config_ids`, or the run id where the run states neither a
    model nor a GPU (traces alone); ``:<job>`` appended for a run that declares jobs."""
    from trainscale.io.parquet import config_ids

    ids = config_ids(results).tolist()
    out = []
    for i, job in enumerate(manifest.jobs):
        row = results.iloc[i]
        known = any(not pd.isna(row[c]) for c in ("model", "layers", "hidden", "gpu"))
        name = ids[i] if known else manifest.run_id
        out.append(f"{name}:{job}" if manifest.raw.get("jobs") else name)
    return out


def ingest_run(
    run_dir: str | Path,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    strict: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ingest one run folder.

    Parameters
    ----------
    run_dir
        ``data/runs/<run>`` (or its ``run.yaml``).
    hardware, models
        The caller's catalogues: the manifest's GPU and model names are checked against them,
        and MFU, HFU and the power check take the GPU's peak, TDP and the model's shape from
        them.
    strict
        Make garbled or truncated step lines an error instead of a warning.

    Returns
    -------
    results : pandas.DataFrame
        One row per job in the dataset schema (:data:`~trainscale.schema.DATASET_COLUMNS`,
        typed by :func:`trainscale.io.parquet.conform`): configuration columns as the manifest
        states them, ``dp``/``grad_accum`` where derivable, the metrics described in the
        module docstring, ``source = "measured"``, ``study = "runs"``, ``config_id``
        (:func:`trainscale.io.parquet.config_ids`, ``:<job>`` appended for multi-job runs),
        ``run_id``, ``log_file`` (the files used, ``;``-separated, relative to the run folder),
        ``line_range`` (first-last line of the steady steps, or ``steps a-b`` for JSON logs),
        ``n_steps``, ``step_time_s_iqr``.
    steps : pandas.DataFrame
        One row per logged step of every step log, columns
        :data:`trainscale.schema.STEP_TABLE_COLUMNS`:
        ``run_id``, ``job``, ``log_file``, ``line``, ``step``, ``warmup`` (dropped from the
        steady state), ``timestamp``, ``loss``, ``step_time_s``, ``tokens_per_s_per_gpu``,
        ``tflops_per_gpu``, ``mfu`` (fraction), ``mem_gib``, ``power_w_per_gpu`` (aligned power
        logs, else the log's own field), ``energy_j_per_gpu`` (J per step), ``global_batch``.

    Raises
    ------
    InputFileError
        Invalid manifest (file, line and key named), unreadable or unparseable log (file and
        line named), a harness log cut short, or — with ``strict`` — any garbled step line.
    """
    from trainscale.io.parquet import conform

    manifest = load_manifest(run_dir, hardware=hardware, models=models)
    rows, step_tables = [], []
    for job in manifest.jobs:
        row, steps = _ingest_job(manifest, job, strict, (hardware, models))
        rows.append(row)
        step_tables.append(steps)
    results = conform(pd.DataFrame(rows), DATASET_COLUMNS)
    results["config_id"] = _config_ids(results, manifest)
    non_empty = [t for t in step_tables if not t.empty]
    steps = (
        pd.concat(non_empty, ignore_index=True)
        if non_empty
        else pd.DataFrame(columns=names(STEP_TABLE_COLUMNS))
    )
    return results, steps[names(STEP_TABLE_COLUMNS)].reset_index(drop=True)


def write_ingested(
    run_dir: str | Path,
    results_path: str | Path,
    steps_path: str | Path | None = None,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    strict: bool = False,
) -> pd.DataFrame:
    """Ingest ``run_dir`` with the caller's catalogues (see :func:`ingest_run`) and write the
    results (and per-step) Parquet files, all or nothing.

    Both files appear only if the whole run was read; each is written to a temporary file and
    renamed. Returns the results frame.
    """
    from trainscale.io.atomic import atomic_paths
    from trainscale.io.parquet import write_parquet

    results, steps = ingest_run(run_dir, hardware=hardware, models=models, strict=strict)
    targets = [Path(results_path)] + ([Path(steps_path)] if steps_path is not None else [])
    with atomic_paths(targets) as temps:
        write_parquet(results, temps[0], DATASET_COLUMNS, {"run_id": str(results["run_id"][0])})
        if steps_path is not None:
            _write_steps(steps, temps[1])
    return results


def _write_steps(steps: pd.DataFrame, path: Path) -> None:
    from trainscale.io.parquet import conform

    frame = conform(steps, STEP_TABLE_COLUMNS)
    frame.to_parquet(path, index=False, engine="pyarrow", compression="zstd")
