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

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.ingest.derived import add_derived_metrics, tokens_per_step
from trainscale.ingest.job_logs import (
    COLLECTIVE_COLUMNS,
    TraceSummary,
    power_frames,
    read_step_log,
    step_power,
    strict_or_warn,
    trace_summary,
)
from trainscale.ingest.manifest import (
    POWER_KINDS,
    STEP_KINDS,
    LogEntry,
    RunManifest,
    load_manifest,
)
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    STEP_TABLE_COLUMNS,
    names,
)

if TYPE_CHECKING:
    from trainscale.ingest.steplog import StepLog
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import Gpu, HardwareCatalog

    #: The parts of the catalogue a run is checked and ingested with: (hardware, models).
    _Catalogues = tuple[HardwareCatalog, Mapping[str, ModelShape]]

__all__ = [
    "ingest_run",
    "write_ingested",
]

_CONFIG_NAMES = tuple(c.name for c in CONFIGURATION_COLUMNS)


def _median(values: pd.Series) -> float:
    data = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    data = data[~np.isnan(data)]
    return float(np.median(data)) if data.size else np.nan


def _ingest_job(
    manifest: RunManifest, job: str, strict: bool, catalogue: _Catalogues
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The job's result row and its step table (module docstring)."""
    from trainscale.ingest.batch_ramp import announce_ramp
    from trainscale.ingest.nccltests import parse_nccl_tests
    from trainscale.ingest.plausibility import check_result_row

    hardware, _ = catalogue
    cfg = manifest.configuration_for(job)
    entries = [e for e in manifest.logs if e.job == job]
    step_entries = [e for e in entries if e.kind in STEP_KINDS]
    power_entries = [e for e in entries if e.kind in POWER_KINDS]
    trace_entries = [e for e in entries if e.kind == "kineto_trace"]
    for entry in entries:
        if entry.kind == "nccl_tests":
            parse_nccl_tests(entry.path)  # checked; nccl-tests results are not step metrics

    notes: list[str] = []
    step_logs = [read_step_log(e, manifest, strict, notes) for e in step_entries]
    ramp = max(
        (
            announce_ramp(log.steps, cfg, e.path)
            for e, log in zip(step_entries, step_logs, strict=True)
        ),
        default=0,
    )
    if ramp > manifest.warmup_steps:  # Megatron's batch ramp-up counts as warm-up
        manifest = dataclasses.replace(manifest, warmup_steps=ramp)
    power = power_frames(power_entries, cfg, notes, hardware, (manifest.path, strict))
    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    trace = (
        trace_summary(trace_entries, manifest.trace_warmup_steps, cfg, manifest.path)
        if trace_entries
        else None
    )

    row: dict[str, Any] = {name: cfg.get(name) for name in _CONFIG_NAMES}
    step_tables = _step_tables(
        manifest, job, cfg, list(zip(step_entries, step_logs, strict=True)), gpu
    )
    used_files = []
    if step_logs:
        used_files.append(step_entries[0].relpath)
        logged_mfu, energy_per_step = _step_metrics(
            row, manifest, cfg, (step_entries[0], step_logs[0], step_tables[0]), (power, notes)
        )
    else:
        logged_mfu, energy_per_step = np.nan, np.nan
        if power:
            samples = pd.concat(power, ignore_index=True)
            row["power_w_per_gpu"] = float(samples.groupby("gpu_index")["power_w"].mean().mean())
    if trace is not None:
        used_files += [e.relpath for e in trace_entries]
        _trace_metrics(row, trace, cfg, has_step_log=bool(step_logs))
    used_files += [e.relpath for e in power_entries]

    add_derived_metrics(row, cfg, catalogue, logged_mfu=logged_mfu, energy_per_step=energy_per_step)
    for note in check_result_row(row, cfg, gpu, manifest.path):
        strict_or_warn(TrainscaleError(note), strict, notes)
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


def _step_tables(
    manifest: RunManifest,
    job: str,
    cfg: dict[str, Any],
    logs: list[tuple[LogEntry, StepLog]],
    gpu: Gpu | None,
) -> list[pd.DataFrame]:
    """Each step log's rows in the step-table layout (run, job and file named, warm-up marked,
    an MFU that cannot be a measurement masked, the batch filled in), each log checked."""
    from trainscale.ingest.plausibility import check_steps

    tables = []
    for entry, log in logs:
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
        tables.append(table)
    return tables


def _step_metrics(
    row: dict[str, Any],
    manifest: RunManifest,
    cfg: dict[str, Any],
    primary: tuple[LogEntry, StepLog, pd.DataFrame],
    power_and_notes: tuple[list[pd.DataFrame], list[str]],
) -> tuple[float, float]:
    """Set the row's steady-state metrics from the first step log (``primary``: its entry,
    parsed log and step table, which gets the aligned power); return the log's own median MFU
    and energy per GPU per step (NaN where it has none)."""
    from trainscale.ingest.steady import steady_state

    entry, log, table = primary
    power, notes = power_and_notes
    warmup = manifest.warmup_steps
    num_gpus = cfg.get("num_gpus")
    per_step = tokens_per_step(cfg)
    if power:
        table["power_w_per_gpu"] = step_power(power, table, entry.path, warmup, notes).to_numpy()
    state = steady_state(log, warmup_steps=warmup)
    kept = table.iloc[warmup:]
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
    elif per_step and not math.isnan(state.step_time_s):
        row["tokens_per_s"] = per_step / state.step_time_s
        row["tokens_per_s_per_gpu"] = row["tokens_per_s"] / num_gpus if num_gpus else np.nan
    row["mem_gib_per_gpu"] = state.mem_gib
    row["power_w_per_gpu"] = _median(kept["power_w_per_gpu"])
    row["fits_memory"] = True
    return state.mfu, _median(kept["energy_j_per_gpu"])


def _trace_metrics(
    row: dict[str, Any], trace: TraceSummary, cfg: dict[str, Any], *, has_step_log: bool
) -> None:
    """Set the row's compute and communication times from the traces (seconds per step); a
    job without a step log takes its step time and throughput from the profiler steps."""
    if trace.has_gpu_kernels:
        row.update(
            compute_s=trace.compute_s, comm_s=trace.comm_s, exposed_comm_s=trace.exposed_comm_s
        )
        for column in set(COLLECTIVE_COLUMNS.values()):
            row[column] = trace.collectives.get(column, 0.0)
    if has_step_log:
        return
    num_gpus = cfg.get("num_gpus")
    per_step = tokens_per_step(cfg)
    row["step_time_s"] = trace.step_time_s
    row["n_steps"] = trace.n_steps or None
    if per_step and trace.step_time_s > 0:
        row["tokens_per_s"] = per_step / trace.step_time_s
        row["tokens_per_s_per_gpu"] = row["tokens_per_s"] / num_gpus if num_gpus else (np.nan)


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
