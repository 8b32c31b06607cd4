"""HolisticTraceAnalysis's overlap, temporal and kernel-type breakdowns, vectorised.

Reference: ../shared/reference/log-formats.md §5 steps 5-9, following
``facebookresearch/HolisticTraceAnalysis`` @ f4d0062c (``hta/utils/utils.py``
``get_kernel_type`` / ``merge_kernel_intervals``, ``hta/analyzers/communication_analysis.py``
``get_comm_comp_overlap``, ``hta/analyzers/breakdown_analysis.py``). Input is what
:func:`trainscale.ingest.kineto.load_traces` returns (aligned, last step dropped by default).

- kernels are classified by name: COMMUNICATION, MEMORY, COMPUTATION, else OTHER;
- intervals of one class are merged across streams (touching intervals merge);
- a sweep with +1/-1 for merged COMM and +2/-2 for merged COMP intervals gives the overlap where
  the running sum is 3; ``comp_comm_overlap_pctg = round(100 * overlap / comm, 2)``;
- ``exposed_comm_us = comm_us - overlap_us`` (a project metric, not an HTA name).

All times are microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from trainscale.ingest._collectives import collective_from_kernel_name
from trainscale.ingest.kineto import KinetoTrace

__all__ = [
    "COMMUNICATION",
    "COMPUTATION",
    "MEMORY",
    "OTHER",
    "classify_kernels",
    "collective_breakdown",
    "kernel_type_breakdown",
    "merge_intervals",
    "overlap_summary",
    "step_breakdown",
]

COMMUNICATION = "COMMUNICATION"
MEMORY = "MEMORY"
COMPUTATION = "COMPUTATION"
OTHER = "OTHER"

# hta/common/types.py name patterns, applied with re.match (anchored at the start).
_COMM_RE = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
_MEMORY_RE = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
_NOT_COMPUTE_RE = re.compile(
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)"
    r"|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)"
    r"|(^collective_subgraph_execution)"
)

#: Bit values of HTA's kernel-type sweep (``get_gpu_kernel_breakdown``), in label order.
_TYPE_BITS = ((COMPUTATION, 1), (COMMUNICATION, 2), (MEMORY, 4))


def _kernel_type(name: str) -> str:
    if _COMM_RE.match(name):
        return COMMUNICATION
    if _MEMORY_RE.match(name):
        return MEMORY
    if not _NOT_COMPUTE_RE.match(name):
        return COMPUTATION
    return OTHER


def classify_kernels(names: pd.Series) -> np.ndarray:
    """Return HTA's kernel type for each GPU event name.

    Parameters
    ----------
    names
        Kernel, memcpy and memset names.

    Returns
    -------
    numpy.ndarray of str
        ``"COMMUNICATION"``, ``"MEMORY"``, ``"COMPUTATION"`` or ``"OTHER"`` per name.
    """
    codes, uniques = pd.factorize(pd.Series(names, dtype="string").fillna(""))
    types = np.array([_kernel_type(str(u)) for u in uniques], dtype=object)
    return types[codes] if len(uniques) else np.array([], dtype=object)


def merge_intervals(start_us: np.ndarray, end_us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals that overlap or touch (HTA ``merge_kernel_intervals``).

    Parameters
    ----------
    start_us, end_us
        Interval bounds (µs), any order.

    Returns
    -------
    tuple of numpy.ndarray
        Start and end (µs) of the disjoint merged intervals, sorted by start.
    """
    start = np.asarray(start_us, dtype=np.float64)
    end = np.asarray(end_us, dtype=np.float64)
    if start.size == 0:
        return start.copy(), end.copy()
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    previous_max_end = np.maximum.accumulate(end)[:-1]
    new_group = np.concatenate(([True], start[1:] > previous_max_end))
    first = np.flatnonzero(new_group)
    return start[first], np.maximum.reduceat(end, first)


def _sweep(interval_sets: Sequence[tuple[np.ndarray, np.ndarray, int]]) -> pd.Series:
    """Time (µs) spent at each running value of a +v/-v sweep over merged interval sets."""
    times = np.concatenate([np.concatenate((s, e)) for s, e, _ in interval_sets])
    deltas = np.concatenate(
        [np.concatenate((np.full(s.size, v), np.full(e.size, -v))) for s, e, v in interval_sets]
    ).astype(np.int64)
    if times.size == 0:
        return pd.Series(dtype=np.float64)
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(deltas[order])
    durations = np.diff(times)
    return pd.Series(durations).groupby(running[:-1]).sum()


def _length(start: np.ndarray, end: np.ndarray) -> float:
    return float(np.sum(end - start))


def _intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length (µs) of the intersection of two merged interval sets (the sweep at value 3)."""
    by_value = _sweep([(a[0], a[1], 1), (b[0], b[1], 2)])
    return float(by_value.get(3, 0.0))


def _gpu_kernels(trace: KinetoTrace) -> pd.DataFrame:
    gpu = trace.events[trace.events["is_gpu"]]
    return gpu.assign(kernel_type=classify_kernels(gpu["name"]))


def _merged(kernels: pd.DataFrame, kernel_type: str | None = None):
    if kernel_type is not None:
        kernels = kernels[kernels["kernel_type"] == kernel_type]
    return merge_intervals(kernels["ts_us"].to_numpy(), kernels["end_us"].to_numpy())


def _metrics(kernels: pd.DataFrame) -> dict[str, float]:
    """Overlap and temporal breakdown of one set of GPU events (one rank or one step)."""
    comm = _merged(kernels, COMMUNICATION)
    comp = _merged(kernels, COMPUTATION)
    everything = _merged(kernels)
    comm_us, comp_us = _length(*comm), _length(*comp)
    overlap_us = _intersection(comm, comp)
    span_us = float(everything[1][-1] - everything[0][0]) if everything[0].size else 0.0
    idle_us = span_us - _length(*everything)
    ratio = overlap_us / comm_us if comm_us > 0 else np.nan
    return {
        "comp_comm_overlap_pctg": float(np.round(100 * ratio, 2)),
        "comm_us": comm_us,
        "comp_us": comp_us,
        "overlap_us": overlap_us,
        "exposed_comm_us": comm_us - overlap_us,
        "kernel_span_us": span_us,
        "idle_us": idle_us,
        "non_compute_us": span_us - comp_us - idle_us,
    }


def _percentages(frame: pd.DataFrame) -> pd.DataFrame:
    span = frame["kernel_span_us"].where(frame["kernel_span_us"] > 0)
    for column, source in (
        ("idle_pct", "idle_us"),
        ("compute_pct", "comp_us"),
        ("non_compute_pct", "non_compute_us"),
    ):
        frame[column] = (100 * frame[source] / span).round(2)
    return frame


def overlap_summary(traces: Sequence[KinetoTrace]) -> pd.DataFrame:
    """Per rank: HTA's computation/communication overlap and temporal breakdown.

    Parameters
    ----------
    traces
        From :func:`trainscale.ingest.kineto.load_traces`.

    Returns
    -------
    pandas.DataFrame
        One row per rank: ``rank``, ``comp_comm_overlap_pctg`` (% of communication time hidden
        under computation, 2 decimals, NaN without communication), ``comm_us``, ``comp_us``,
        ``overlap_us``, ``exposed_comm_us``, ``kernel_span_us`` (last GPU end - first GPU
        start), ``idle_us``, ``non_compute_us``, ``idle_pct``, ``compute_pct``,
        ``non_compute_pct`` (% of the kernel span, 2 decimals), ``path``.
    """
    rows = [{"rank": t.rank, **_metrics(_gpu_kernels(t)), "path": t.path} for t in traces]
    frame = pd.DataFrame(rows, columns=["rank", *_metrics(_empty_kernels()).keys(), "path"])
    return _percentages(frame)


def _empty_kernels() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts_us": np.array([], dtype=np.float64),
            "end_us": np.array([], dtype=np.float64),
            "kernel_type": np.array([], dtype=object),
        }
    )


def _with_collectives(kernels: pd.DataFrame) -> pd.DataFrame:
    comm = kernels[kernels["kernel_type"] == COMMUNICATION]
    from_name = [collective_from_kernel_name(str(n)) for n in comm["name"]]
    arg = comm["collective"].fillna("").to_numpy()
    return comm.assign(collective=np.where(arg != "", arg, from_name))


def collective_breakdown(traces: Sequence[KinetoTrace]) -> pd.DataFrame:
    """Per rank and collective: communication time, exposed part and kernel count.

    The collective is ``args["Collective name"]`` when the kernel has it, else the name encoded
    in the kernel (``ncclKernel_AllReduce_…`` → ``allreduce``), else ``"unknown"``.

    Returns
    -------
    pandas.DataFrame
        ``rank``, ``collective``, ``kernels`` (count), ``kernel_time_us`` (sum of kernel
        durations), ``comm_us`` (merged intervals of that collective across streams; collectives
        running concurrently each count their own time), ``exposed_comm_us`` (the part of
        ``comm_us`` not overlapped by computation).
    """
    rows = []
    for trace in traces:
        kernels = _gpu_kernels(trace)
        comp = _merged(kernels, COMPUTATION)
        for name, group in _with_collectives(kernels).groupby("collective", sort=True):
            merged = _merged(group)
            comm_us = _length(*merged)
            rows.append(
                {
                    "rank": trace.rank,
                    "collective": name,
                    "kernels": len(group),
                    "kernel_time_us": float(group["dur_us"].sum()),
                    "comm_us": comm_us,
                    "exposed_comm_us": comm_us - _intersection(merged, comp),
                }
            )
    columns = ["rank", "collective", "kernels", "kernel_time_us", "comm_us", "exposed_comm_us"]
    return pd.DataFrame(rows, columns=columns)


def step_breakdown(traces: Sequence[KinetoTrace]) -> pd.DataFrame:
    """Per rank and ``ProfilerStep#N``: the overlap metrics of the kernels launched in it.

    A GPU event belongs to the step of the CPU event that launched it (HTA ``add_iteration``).

    Returns
    -------
    pandas.DataFrame
        ``rank``, ``step``, ``step_dur_us`` (CPU ``ProfilerStep`` duration), the columns of
        :func:`overlap_summary` (without ``path``) for that step's kernels, and one
        ``comm_<collective>_us`` column per collective seen (merged time of that collective in
        the step; 0 when absent).
    """
    rows = []
    for trace in traces:
        kernels = _gpu_kernels(trace)
        durations = dict(zip(trace.steps["step"], trace.steps["dur_us"], strict=True))
        for step, group in kernels.groupby("step", sort=True):
            if step < 0:
                continue
            row = {
                "rank": trace.rank,
                "step": int(step),
                "step_dur_us": float(durations.get(step, np.nan)),
                **_metrics(group),
            }
            for name, comm in _with_collectives(group).groupby("collective", sort=True):
                row[f"comm_{name}_us"] = _length(*_merged(comm))
            rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(
            columns=["rank", "step", "step_dur_us", *_metrics(_empty_kernels()).keys()]
        )
    collective_columns = sorted(
        c for c in frame.columns if c.startswith("comm_") and c.endswith("_us") and c != "comm_us"
    )
    frame[collective_columns] = frame[collective_columns].fillna(0.0)
    frame = _percentages(frame)
    fixed = [c for c in frame.columns if c not in collective_columns]
    return frame[[*fixed, *collective_columns]]


def kernel_type_breakdown(traces: Sequence[KinetoTrace]) -> pd.DataFrame:
    """HTA ``get_gpu_kernel_breakdown`` kernel-type table, summed over ranks.

    Merged COMPUTATION, COMMUNICATION and MEMORY intervals are swept with values 1, 2 and 4;
    every stretch with a non-zero running value is labelled by its set bits
    (``"COMPUTATION overlapping COMMUNICATION"``, …). ``COMMUNICATION`` alone is communication
    overlapped by neither computation nor memory copies.

    Returns
    -------
    pandas.DataFrame
        ``kernel_type`` (label), ``time_us`` (summed over ranks), ``percentage`` (of the total,
        1 decimal, as HTA), sorted by ``time_us`` descending; labels with zero time are omitted.
    """
    totals: dict[str, float] = {}
    for trace in traces:
        kernels = _gpu_kernels(trace)
        sets = [(*_merged(kernels, kind), bit) for kind, bit in _TYPE_BITS]
        for value, duration in _sweep(sets).items():
            if value > 0 and duration > 0:
                label = _label(int(value))
                totals[label] = totals.get(label, 0.0) + float(duration)
    frame = pd.DataFrame({"kernel_type": list(totals), "time_us": list(totals.values())})
    frame = frame.sort_values("time_us", ascending=False, kind="stable").reset_index(drop=True)
    frame["percentage"] = (100 * frame["time_us"] / frame["time_us"].sum()).round(1)
    return frame


def _label(value: int) -> str:
    return " overlapping ".join(kind for kind, bit in _TYPE_BITS if value & bit)
