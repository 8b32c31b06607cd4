"""A job's logs, read with the parsers of :mod:`trainscale.ingest` and checked.

One function per kind of log, each returning what the job's row and step table are assembled from
(:mod:`trainscale.ingest.runs`):

- :func:`read_step_log`: a step log, its skipped lines reported (an error with ``strict``), a
  harness log checked to hold every step its manifest says it ran;
- :func:`power_frames`: the job's power logs, each checked (:mod:`trainscale.ingest.plausibility`:
  a power reading, the TDP ceiling, idle floor, GPU coverage);
- :func:`step_power`: mean power per GPU during each step (W), over every power log;
- :func:`trace_summary`: per-step compute, communication and exposed communication from the
  Kineto traces (seconds per step, HolisticTraceAnalysis's algorithm, :mod:`trainscale.ingest.hta`).

Warnings go to Python's ``warnings`` (stderr) and to the ``notes`` list that becomes the row's
``warnings`` column (:func:`warn`); :func:`strict_or_warn` raises them instead with ``strict``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError, TrainscaleError

if TYPE_CHECKING:
    from trainscale.ingest.manifest import LogEntry, RunManifest
    from trainscale.ingest.steplog import StepLog
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "COLLECTIVE_COLUMNS",
    "TraceSummary",
    "power_frames",
    "read_step_log",
    "step_power",
    "strict_or_warn",
    "trace_summary",
    "warn",
]

#: Trace collective name → result column (seconds per step).
COLLECTIVE_COLUMNS = {
    "allgather": "allgather_s",
    "reducescatter": "reducescatter_s",
    "allreduce": "allreduce_s",
    "sendrecv": "p2p_s",
    "send": "p2p_s",
    "recv": "p2p_s",
}


def warn(notes: list[str], message: str) -> None:
    """Print a warning (Python ``warnings``, i.e. stderr) and keep it for the ``warnings``
    column."""
    notes.append(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def strict_or_warn(message: TrainscaleError, strict: bool, notes: list[str]) -> None:
    """Raise ``message`` with ``strict``, else warn and keep it for the ``warnings`` column."""
    if strict:
        raise message
    warn(notes, str(message))


def read_step_log(
    entry: LogEntry, manifest: RunManifest, strict: bool, notes: list[str]
) -> StepLog:
    """Parse one step log; report skipped lines; check a harness log is complete."""
    from trainscale.ingest.steplog import parse_step_log

    log = parse_step_log(entry.path, format=entry.kind)  # type: ignore[arg-type]
    for note in log.warnings:
        warn(notes, note)
    if log.skipped_lines:
        numbers = ", ".join(map(str, log.skipped_line_numbers[:10]))
        more = " …" if log.skipped_lines > 10 else ""
        strict_or_warn(
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


def power_frames(
    entries: list[LogEntry],
    cfg: dict[str, Any],
    notes: list[str],
    hardware: HardwareCatalog,
    checks: tuple[Path, bool],
) -> list[pd.DataFrame]:
    """Parse the job's power logs and check them (:mod:`trainscale.ingest.plausibility`);
    ``checks`` is (manifest path, strict)."""
    from trainscale.ingest.distinct_logs import check_distinct_power_logs
    from trainscale.ingest.plausibility import (
        check_power_ceiling,
        check_power_coverage,
        check_power_samples,
    )
    from trainscale.ingest.power import parse_power_log

    manifest_path, strict = checks

    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    frames = []
    for entry in entries:
        fmt = "nvidia-smi" if entry.kind == "nvidia_smi" else "dcgmi"
        options = dict(entry.options)
        log = parse_power_log(entry.path, format=fmt, **options)  # type: ignore[arg-type]
        for note in log.warnings:
            warn(notes, note)
        if log.skipped_lines:
            warn(notes, f"{entry.path}: {log.skipped_lines} garbled power row(s) skipped")
        samples = log.samples
        if not samples["power_w"].notna().any():
            raise InputFileError(
                entry.path,
                "no power reading in any row (expected a power.draw [W] column, or POWER for "
                "dcgmi dmon)",
            )
        check_power_ceiling(samples, entry.path, gpu, str(cfg.get("gpu")))
        for note in check_power_samples(samples, entry.path, gpu, str(cfg.get("gpu"))):
            strict_or_warn(TrainscaleError(note), strict, notes)
        frames.append(samples.assign(log_file=str(entry.path)))
    check_distinct_power_logs(frames, cfg)
    for note in check_power_coverage(frames, cfg.get("num_gpus"), manifest_path):
        strict_or_warn(TrainscaleError(note), strict, notes)
    return frames


def step_power(
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
            warn(
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
class TraceSummary:
    step_time_s: float = np.nan
    compute_s: float = np.nan
    comm_s: float = np.nan
    exposed_comm_s: float = np.nan
    collectives: dict[str, float] = field(default_factory=dict)
    n_steps: int = 0
    has_gpu_kernels: bool = False


def trace_summary(
    entries: list[LogEntry], warmup: int, cfg: dict[str, Any], manifest_path: Path
) -> TraceSummary:
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
    summary = TraceSummary()
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
    for name, column in COLLECTIVE_COLUMNS.items():
        source = f"comm_{name}_us"
        if source in per_rank:
            value = float(per_rank[source].mean()) / 1e6
            summary.collectives[column] = summary.collectives.get(column, 0.0) + value
    return summary
