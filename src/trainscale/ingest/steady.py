"""Steady state of a run: drop warm-up steps, then median and interquartile range per metric.

Reference: ../shared/reference/log-formats.md §0 "Warm-up" (the first logged step includes
initialisation and compilation, e.g. Megatron golden values 7.62 s at step 1 against about
0.087 s later) and §5 step 3 (HTA already drops the last, truncated profiler step, so traces
need no further warm-up removal by default).

Medians and quartiles ignore NaN; the IQR is the 75th minus the 25th percentile (linear
interpolation, numpy's default).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.ingest.steplog import StepLog

__all__ = ["LOG_METRICS", "TRACE_METRICS", "SteadyState", "steady_state", "steady_trace_steps"]

#: Per-step columns of a step log summarised by :func:`steady_state`.
LOG_METRICS: tuple[str, ...] = (
    "step_time_s",
    "loss",
    "tokens_per_s_per_gpu",
    "tflops_per_gpu",
    "mfu",
    "mem_gib",
    "power_w_per_gpu",
    "energy_j_per_gpu",
)

#: Per-step columns of :func:`trainscale.ingest.hta.step_breakdown` summarised per rank.
TRACE_METRICS: tuple[str, ...] = (
    "step_dur_us",
    "comp_us",
    "comm_us",
    "overlap_us",
    "exposed_comm_us",
    "kernel_span_us",
    "idle_us",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SteadyState:
    """Median and interquartile range of each per-step metric after the warm-up."""

    n_steps: int
    """Logged steps used (after dropping the warm-up)."""
    warmup_steps: int
    """Logged steps dropped at the start."""
    first_step: int
    """First step number used."""
    last_step: int
    """Last step number used."""
    first_line: int | None
    """Line of the first step used (None for JSON inputs)."""
    last_line: int | None
    """Line of the last step used (None for JSON inputs)."""
    step_time_s: float
    """Median seconds per step."""
    step_time_s_iqr: float
    """Interquartile range of seconds per step."""
    loss: float
    loss_iqr: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_gpu_iqr: float
    tflops_per_gpu: float
    tflops_per_gpu_iqr: float
    mfu: float
    """Median model FLOPs utilisation, fraction 0..1."""
    mfu_iqr: float
    mem_gib: float
    mem_gib_iqr: float
    power_w_per_gpu: float
    power_w_per_gpu_iqr: float
    energy_j_per_gpu: float
    energy_j_per_gpu_iqr: float

    def to_dict(self) -> dict[str, object]:
        """The fields as a plain dict (e.g. one row of a results table)."""
        return asdict(self)


def _median_iqr(values: pd.Series) -> tuple[float, float]:
    data = values.to_numpy(dtype=np.float64, na_value=np.nan)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return np.nan, np.nan
    q25, q50, q75 = np.percentile(data, [25, 50, 75])
    return float(q50), float(q75 - q25)


def _line(value: object) -> int | None:
    return None if pd.isna(value) else int(value)


def steady_state(steps: pd.DataFrame | StepLog, *, warmup_steps: int = 1) -> SteadyState:
    """Summarise a step log's steady state.

    Parameters
    ----------
    steps
        :class:`~trainscale.ingest.steplog.StepLog` or its ``steps`` table, in file order.
    warmup_steps
        Logged steps (rows) to drop at the start; default 1 (the first logged step carries
        initialisation and compilation).

    Returns
    -------
    SteadyState
        ``n_steps``, the step and line range used, and median / ``_iqr`` of each of
        :data:`LOG_METRICS` (NaN when the log has no such field).

    Raises
    ------
    TrainscaleError
        ``warmup_steps`` is negative, or no step is left after the warm-up.
    """
    frame = steps.steps if isinstance(steps, StepLog) else steps
    where = f"{steps.path}: " if isinstance(steps, StepLog) else ""
    if warmup_steps < 0:
        raise TrainscaleError(f"warmup_steps must be >= 0, not {warmup_steps}")
    kept = frame.iloc[warmup_steps:]
    if kept.empty:
        raise TrainscaleError(
            f"{where}only {len(frame)} logged step(s); none left after dropping "
            f"{warmup_steps} warm-up step(s)"
        )
    stats: dict[str, float] = {}
    for metric in LOG_METRICS:
        values = kept[metric] if metric in kept else pd.Series(np.nan, index=kept.index)
        stats[metric], stats[f"{metric}_iqr"] = _median_iqr(values)
    lines = kept["line"] if "line" in kept else pd.Series(pd.NA, index=kept.index)
    return SteadyState(
        n_steps=len(kept),
        warmup_steps=warmup_steps,
        first_step=int(kept["step"].iloc[0]),
        last_step=int(kept["step"].iloc[-1]),
        first_line=_line(lines.iloc[0]),
        last_line=_line(lines.iloc[-1]),
        **stats,
    )


def steady_trace_steps(step_breakdown: pd.DataFrame, *, warmup_steps: int = 0) -> pd.DataFrame:
    """Per rank: median and IQR of the per-profiler-step trace metrics.

    Parameters
    ----------
    step_breakdown
        :func:`trainscale.ingest.hta.step_breakdown` output (the last profiler step is already
        dropped by :func:`~trainscale.ingest.kineto.load_traces`, HTA's default).
    warmup_steps
        Profiler steps to drop at the start of each rank; default 0 (HTA's default).

    Returns
    -------
    pandas.DataFrame
        One row per rank: ``rank``, ``n_steps``, ``first_step``, ``last_step``, then the median
        and ``_iqr`` of each of :data:`TRACE_METRICS` (µs).

    Raises
    ------
    TrainscaleError
        ``warmup_steps`` is negative.
    """
    if warmup_steps < 0:
        raise TrainscaleError(f"warmup_steps must be >= 0, not {warmup_steps}")
    rows = []
    for rank, group in step_breakdown.sort_values(["rank", "step"]).groupby("rank", sort=True):
        kept = group.iloc[warmup_steps:]
        if kept.empty:
            continue
        row = {
            "rank": rank,
            "n_steps": len(kept),
            "first_step": int(kept["step"].iloc[0]),
            "last_step": int(kept["step"].iloc[-1]),
        }
        for metric in TRACE_METRICS:
            row[metric], row[f"{metric}_iqr"] = _median_iqr(kept[metric])
        rows.append(row)
    columns = [
        "rank",
        "n_steps",
        "first_step",
        "last_step",
        *[c for m in TRACE_METRICS for c in (m, f"{m}_iqr")],
    ]
    return pd.DataFrame(rows, columns=columns)
