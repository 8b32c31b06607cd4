"""PyTorch profiler (Kineto) traces: read, round, align ranks and keep complete iterations.

Reference: ../shared/reference/log-formats.md §4 (trace structure) and §5 steps 1-4, which follow
HolisticTraceAnalysis (``facebookresearch/HolisticTraceAnalysis`` @ f4d0062c,
``hta/common/trace_parser.py`` and ``hta/common/trace.py``):

1. events without ``dur`` or ``cat`` and the ``Trace`` span are dropped; when the trace has
   float (ns-resolution) timestamps, ``end = floor(ts + dur)``, ``ts = ceil(ts)``;
2. ranks loaded together are aligned by subtracting the global minimum ``ts``;
3. GPU events (``args["stream"]`` present) are kept only when their ``correlation`` matches a
   CPU event that starts before the last ``ProfilerStep#N`` (the last, usually truncated, step is
   dropped; ``include_last_profiler_step=True`` keeps CPU events up to its end instead). The
   filter runs only when the traces hold at least two distinct ``ProfilerStep`` names.

All times are microseconds (``_us``), as in the trace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._collectives import canonical_collective
from trainscale.ingest._text import parse_json
from trainscale.ingest.kineto_events import refuse_damaged_events
from trainscale.io.compressed import read_maybe_gzip

__all__ = ["KinetoTrace", "check_same_job", "load_traces", "no_gpu_kernels", "read_trace"]

_STEP_NAME_RE = re.compile(r"ProfilerStep\s*#\s*(\d{1,15})")
_RANK_IN_NAME_RE = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class KinetoTrace:
    """One rank's trace after parsing (and, from :func:`load_traces`, alignment and filtering)."""

    path: str
    """The file it was read from."""
    rank: int
    """``distributedInfo.rank``; else ``N`` of ``rank-N`` in the file name; else the lowest
    rank no other file of the job claims."""
    world_size: int | None
    """``distributedInfo.world_size`` when the trace has it."""
    device_name: str | None
    """``deviceProperties[0].name`` when the trace has it (e.g. ``NVIDIA A100-PG509-200``)."""
    events: pd.DataFrame
    """One row per event: ``name``, ``cat``, ``ts_us``, ``dur_us``, ``end_us`` (µs, float64,
    integer-valued after ns rounding), ``stream`` (-1 for CPU events), ``correlation`` (-1 when
    absent), ``collective`` (canonical ``args["Collective name"]`` or ``""``), ``is_gpu``, and
    ``step`` (the ``ProfilerStep#N`` number the event belongs to, -1 if none; GPU events inherit
    the step of the CPU event that launched them)."""
    steps: pd.DataFrame
    """One row per ``ProfilerStep#N`` still in ``events``: ``step``, ``ts_us``, ``dur_us``."""
    offset_us: float
    """What was subtracted from every ``ts`` to align ranks (0 for :func:`read_trace`)."""
    filtered: bool
    """Whether the complete-iteration filter (step 3 above) was applied."""
    distributed_info: dict = field(default_factory=dict)
    """``distributedInfo`` as written (empty when the trace has none)."""


def read_trace(path: str | Path) -> KinetoTrace:
    """Read one Kineto trace (``.json`` or ``.json.gz``) without alignment or filtering.

    Parameters
    ----------
    path
        Trace file written by ``torch.profiler`` (one rank).

    Returns
    -------
    KinetoTrace
        Events in µs with HTA's ns rounding applied; ``offset_us`` = 0, ``filtered`` = False.

    Raises
    ------
    InputFileError
        The file is missing, not gzip/JSON (a truncated file included; the message names the
        line when the JSON decoder knows it), or has no ``traceEvents`` list.
    """
    document = _load_json(Path(path))
    refuse_damaged_events(document["traceEvents"], path)
    events = _assign_steps(_events_frame(document["traceEvents"]))
    info = document.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    rank = info.get("rank")
    world_size = info.get("world_size")
    return KinetoTrace(
        path=str(path),
        rank=rank if _is_int(rank) else _rank_from_name(Path(path).name),
        world_size=world_size if _is_int(world_size) else None,
        device_name=_device_name(document.get("deviceProperties")),
        events=events,
        steps=_steps_frame(events),
        offset_us=0.0,
        filtered=False,
        distributed_info=info,
    )


def load_traces(
    paths: Sequence[str | Path], *, include_last_profiler_step: bool = False
) -> list[KinetoTrace]:
    """Read the traces of one job's ranks together, align them and keep complete iterations.

    Parameters
    ----------
    paths
        One trace file per rank.
    include_last_profiler_step
        HTA's option of the same name: False (default) drops the last ``ProfilerStep``.

    Returns
    -------
    list of KinetoTrace
        Sorted by rank; ``ts_us`` shifted by the minimum ``ts`` over all ranks.

    Raises
    ------
    InputFileError
        A file cannot be read (see :func:`read_trace`), two files claim the same rank, or the
        files come from different jobs (:func:`check_same_job`).
    """
    if not paths:
        raise InputFileError("<no trace files>", "give at least one trace file")
    traces = [read_trace(p) for p in paths]
    check_same_job(traces)
    traces = _assign_missing_ranks(traces)
    offset = min((t.events["ts_us"].min() for t in traces if len(t.events)), default=0.0)
    step_names = set()
    for trace in traces:
        step_names.update(trace.steps["step"].tolist())
    apply_filter = len(step_names) >= 2
    loaded = []
    for trace in traces:
        events = trace.events.copy()
        events["ts_us"] = events["ts_us"] - offset
        events["end_us"] = events["end_us"] - offset
        filtered = False
        if apply_filter and len(trace.steps):
            events = _keep_complete_steps(events, include_last_profiler_step)
            filtered = True
        events = _assign_steps(events.reset_index(drop=True))
        loaded.append(
            KinetoTrace(
                path=trace.path,
                rank=trace.rank,
                world_size=trace.world_size,
                device_name=trace.device_name,
                events=events,
                steps=_steps_frame(events),
                offset_us=float(offset),
                filtered=filtered,
                distributed_info=trace.distributed_info,
            )
        )
    return sorted(loaded, key=lambda t: t.rank)


# --- job identity --------------------------------------------------------------------------

#: ``distributedInfo`` fields that every rank of one job shares.
_JOB_FIELDS = ("backend", "world_size", "nccl_version")
#: Fields of a ``pg_config`` entry that every rank in that process group shares.
_GROUP_FIELDS = ("pg_desc", "pg_size", "backend_config", "ranks")


def _job_identity(trace: KinetoTrace) -> dict[str, object]:
    """Field name → value of what must be equal across the ranks of one job."""
    info = trace.distributed_info
    identity: dict[str, object] = {
        f"distributedInfo.{name}": info[name] for name in _JOB_FIELDS if name in info
    }
    if trace.device_name is not None:
        identity["deviceProperties[0].name"] = trace.device_name
    groups = info.get("pg_config")
    for group in groups if isinstance(groups, list) else ():
        if isinstance(group, dict) and "pg_name" in group:
            for name in _GROUP_FIELDS:
                if name in group:
                    key = f"distributedInfo.pg_config[pg_name={group['pg_name']!r}].{name}"
                    identity[key] = group[name]
    return identity


def check_same_job(traces: Sequence[KinetoTrace]) -> None:
    """Raise :class:`InputFileError` unless the traces can be ranks of one job.

    Compared where both traces state them: ``distributedInfo`` ``backend``, ``world_size`` and
    ``nccl_version``, the GPU name, and for each process group present in both (same
    ``pg_name``) its description, size, backend and ranks. A rank must be below the world
    size. The message names both files and the differing field.
    """
    for trace in traces:
        size = trace.world_size
        if size is not None and trace.rank >= size:
            raise InputFileError(
                trace.path, f"distributedInfo.rank {trace.rank} is not below world_size {size}"
            )
    if len(traces) < 2:
        return
    first = traces[0]
    reference = _job_identity(first)
    for trace in traces[1:]:
        identity = _job_identity(trace)
        for key in reference:
            if key in identity and reference[key] != identity[key]:
                raise InputFileError(
                    trace.path,
                    f"not from the same job as {first.path}: {key} is {identity[key]!r} here "
                    f"but {reference[key]!r} there; list only one job's traces together",
                )


# --- traces without GPU kernels -----------------------------------------------------------


def no_gpu_kernels(traces: Sequence[KinetoTrace]) -> list[tuple[str, str]]:
    """The traces that give no GPU numbers, each with why: ``[(path, reason), ...]``.

    A trace without any event on a GPU stream (``args["stream"]``) -- recorded without
    ``ProfilerActivity.CUDA``, on a CPU-only run, or holding only CPU ops and ``cuda_runtime``
    launches -- has nothing to compute overlap or idle time from. Its reason says what the file
    holds instead (every complete event, the last step's included), by category:
    ``no GPU kernel (no event with args.stream), so no overlap
    or idle time to compute; it holds 120 events: cpu_op 100, cuda_runtime 20; record with
    ProfilerActivity.CUDA on a GPU run``. A trace of
    :func:`load_traces` whose GPU events all belonged to the dropped last ``ProfilerStep`` says
    so and names ``--include-last-step``.

    Parameters
    ----------
    traces
        As :func:`load_traces` returns them (or :func:`read_trace`, unfiltered).

    Returns
    -------
    list of (str, str)
        File and reason for each trace without GPU events, in the order given; empty when
        every trace holds GPU events.
    """
    problems = []
    for trace in traces:
        if bool(trace.events["is_gpu"].any()):
            continue
        # What the file holds, before the last step was dropped.
        events = read_trace(trace.path).events if trace.filtered else trace.events
        dropped = int(events["is_gpu"].sum())
        if dropped:
            reason = (
                f"no GPU kernel in a complete profiler step: all {dropped:,} GPU events were "
                "launched in the last ProfilerStep, which is dropped as possibly truncated "
                "(keep it with --include-last-step)"
            )
        else:
            reason = (
                "no GPU kernel (no event with args.stream), so no overlap or idle time to "
                f"compute; {_holdings(events)}; record with ProfilerActivity.CUDA on a "
                "GPU run"
            )
        problems.append((trace.path, reason))
    return problems


def _holdings(events: pd.DataFrame) -> str:
    """``it holds 120 events: cpu_op 100, cuda_runtime 20`` (categories by count, then name)."""
    if not len(events):
        return "it holds no complete event (none with ts, dur and cat)"
    counts = events["cat"].value_counts()
    ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    listed = ", ".join(f"{cat} {count:,}" for cat, count in ordered)
    return f"it holds {len(events):,} events: {listed}"


# --- reading -------------------------------------------------------------------------------


def _load_json(path: Path) -> dict:
    raw = read_maybe_gzip(path, what="trace")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(path, f"not a UTF-8 JSON trace (byte {error.start})") from None
    document = parse_json(text, path)
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise InputFileError(path, "not a Kineto trace: no 'traceEvents' list at the top level")
    return document


_INT_LIMIT = 2**62


def _is_number(value: object) -> bool:
    """A finite JSON number that fits a float64 (garbled files can hold anything)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) < _INT_LIMIT if isinstance(value, int) else math.isfinite(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < _INT_LIMIT


def _events_frame(raw_events: list) -> pd.DataFrame:
    """Vectorised step 1: keep complete events, round ns floats like HTA."""
    kept = [
        e
        for e in raw_events
        if isinstance(e, dict)
        and _is_number(e.get("ts"))
        and _is_number(e.get("dur"))
        and isinstance(e.get("cat"), str)
        and e["cat"] != "Trace"
    ]
    # HTA rounds when pandas gives the ts column a float dtype: a float ts anywhere, or an
    # event without ts (NaN), among all events of the file.
    rounds = any(not isinstance(e, dict) or not _is_int(e.get("ts")) for e in raw_events)
    ts = np.array([e["ts"] for e in kept], dtype=np.float64)
    dur = np.array([e["dur"] for e in kept], dtype=np.float64)
    end = ts + dur
    if rounds:
        end = np.floor(end)
        ts = np.ceil(ts)
        dur = end - ts
    args = [e.get("args") if isinstance(e.get("args"), dict) else {} for e in kept]
    stream = np.array([_int_or(a.get("stream"), -1) for a in args], dtype=np.int64)
    return pd.DataFrame(
        {
            "name": pd.array([_str_or(e.get("name")) for e in kept], dtype="string"),
            "cat": pd.array([e["cat"] for e in kept], dtype="string"),
            "ts_us": ts,
            "dur_us": dur,
            "end_us": end,
            "stream": stream,
            "correlation": np.array(
                [_int_or(a.get("correlation"), -1) for a in args], dtype=np.int64
            ),
            "collective": pd.array(
                [_collective_arg(a.get("Collective name")) for a in args], dtype="string"
            ),
            "is_gpu": stream != -1,
        }
    )


def _int_or(value: object, default: int) -> int:
    return value if _is_int(value) else default


def _str_or(value: object) -> str:
    return value if isinstance(value, str) else ""


def _collective_arg(value: object) -> str:
    return canonical_collective(value) if isinstance(value, str) and value else ""


def _device_name(properties: object) -> str | None:
    if isinstance(properties, list) and properties and isinstance(properties[0], dict):
        name = properties[0].get("name")
        return name if isinstance(name, str) else None
    return None


def _rank_from_name(file_name: str) -> int:
    match = _RANK_IN_NAME_RE.search(file_name)
    return int(match.group(1)) if match else -1


def _assign_missing_ranks(traces: list[KinetoTrace]) -> list[KinetoTrace]:
    """Give rank-less traces the lowest free ranks, in file order; reject duplicate ranks."""
    seen: dict[int, str] = {}
    for trace in traces:
        if trace.rank >= 0 and trace.rank in seen:
            raise InputFileError(
                trace.path,
                f"rank {trace.rank} is also the rank of {seen[trace.rank]}; "
                "load only the ranks of one job together",
            )
        if trace.rank >= 0:
            seen[trace.rank] = trace.path
    free = (r for r in range(len(traces) + len(seen)) if r not in seen)
    out = []
    for trace in traces:
        if trace.rank < 0:
            trace = KinetoTrace(**{**_fields(trace), "rank": next(free)})
        out.append(trace)
    return out


def _fields(trace: KinetoTrace) -> dict:
    return {name: getattr(trace, name) for name in KinetoTrace.__slots__}


# --- steps and filtering -------------------------------------------------------------------


def _step_numbers(events: pd.DataFrame) -> pd.Series:
    """The N of ``ProfilerStep#N`` for CPU events named so, else NA."""
    numbers = events["name"].str.extract(_STEP_NAME_RE, expand=False)
    numbers = numbers.where(~events["is_gpu"])
    return pd.to_numeric(numbers, errors="coerce")


def _steps_frame(events: pd.DataFrame) -> pd.DataFrame:
    numbers = _step_numbers(events)
    mask = numbers.notna().to_numpy()
    steps = pd.DataFrame(
        {
            "step": numbers[mask].astype(np.int64).to_numpy(),
            "ts_us": events["ts_us"].to_numpy()[mask],
            "dur_us": events["dur_us"].to_numpy()[mask],
        }
    )
    return steps.sort_values("ts_us", kind="stable").reset_index(drop=True)


def _keep_complete_steps(events: pd.DataFrame, include_last: bool) -> pd.DataFrame:
    """Step 3: drop CPU events of the last step and GPU events launched outside kept ones."""
    is_step = _step_numbers(events).notna().to_numpy()
    cpu = ~events["is_gpu"].to_numpy()
    ts = events["ts_us"].to_numpy()
    if include_last:
        limit = events["end_us"].to_numpy()[is_step].max()
        keep_cpu = cpu & (ts <= limit)
    else:
        limit = ts[is_step].max()
        keep_cpu = cpu & (ts < limit)
    kept_correlations = np.unique(events["correlation"].to_numpy()[keep_cpu])
    keep_gpu = ~cpu & np.isin(events["correlation"].to_numpy(), kept_correlations)
    return events[keep_cpu | keep_gpu]


def _assign_steps(events: pd.DataFrame) -> pd.DataFrame:
    """Label each event with its ProfilerStep number (HTA ``add_iteration``), -1 if none."""
    steps = _steps_frame(events)
    label = np.full(len(events), -1, dtype=np.int64)
    cpu = ~events["is_gpu"].to_numpy()
    if len(steps):
        starts = steps["ts_us"].to_numpy()
        ends = starts + steps["dur_us"].to_numpy()
        ts = events["ts_us"].to_numpy()
        slot = np.searchsorted(starts, ts, side="right") - 1
        inside = (slot >= 0) & (ts < ends[np.clip(slot, 0, None)])
        cpu_label = np.where(inside, steps["step"].to_numpy()[np.clip(slot, 0, None)], -1)
        label[cpu] = cpu_label[cpu]
        label[~cpu] = _gpu_steps(events, cpu_label, cpu)
    result = events.copy()
    result["step"] = label
    return result


def _gpu_steps(events: pd.DataFrame, cpu_label: np.ndarray, cpu: np.ndarray) -> np.ndarray:
    """A GPU event's step is that of the first CPU event with the same correlation id."""
    correlation = events["correlation"].to_numpy()
    launches = pd.Series(cpu_label[cpu], index=correlation[cpu])
    launches = launches[launches.index != -1]
    launches = launches[~launches.index.duplicated(keep="first")]
    gpu_corr = correlation[~cpu]
    mapped = launches.reindex(gpu_corr).to_numpy()
    return np.where(pd.isna(mapped), -1, mapped).astype(np.int64)
