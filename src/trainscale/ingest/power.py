"""GPU power logs: ``nvidia-smi --query-gpu … --format=csv`` and ``dcgmi dmon``.

Reference: ../shared/reference/log-formats.md §2.1 (nvidia-smi CSV: ``field [unit]`` header,
units inside values unless ``nounits``, ``[N/A]`` / ``[Not Supported]``, ``noheader``; without
``index`` the GPU is the row's position within its poll block — rows of one poll need not share
a timestamp) and §2.2 (dcgmi dmon: ``#Entity`` header and units row repeating, two-token entity
``GPU 0``, ``N/A`` and DCGM blank sentinels, no timestamps).

Output: one row per (sample, GPU) with ``timestamp``, ``gpu_index`` and ``power_w``, plus the
utilisation / memory / clock columns the log has, units in their names. A data row that cannot
be parsed in full is skipped and counted; missing-value markers become NaN.

One module per format, :mod:`~trainscale.ingest.power_smi` and
:mod:`~trainscale.ingest.power_dcgmi`; both build their :class:`PowerLog` in
:mod:`~trainscale.ingest.power_samples`, which checks it: a negative power reading, or
timestamps that go back down the file (a clock that jumped back), is an
:class:`~trainscale.errors.InputFileError` naming the file and line; polls that lack some GPU,
and gaps in the sampling longer than :data:`GAP_FACTOR` (1.5) times the usual interval, are kept
with a warning (:attr:`PowerLog.warnings`). Power above the GPU's TDP is checked where the GPU
is known (:mod:`trainscale.ingest.plausibility`). This module detects the format
(:func:`parse_power_log`) and aligns samples with steps (:func:`align_power_to_steps`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._text import iter_lines
from trainscale.ingest.power_dcgmi import DCGM_HEADER_RE, parse_dcgmi_dmon
from trainscale.ingest.power_samples import PowerFormat, PowerLog
from trainscale.ingest.power_smi import parse_nvidia_smi_csv

__all__ = [
    "align_power_to_steps",
    "parse_power_log",
]


def parse_power_log(
    path: str | Path, format: PowerFormat | Literal["auto"] = "auto", **options: object
) -> PowerLog:
    """Parse a power log, detecting the format: ``dcgmi`` if it has a ``#Entity`` header line,
    else ``nvidia-smi``. ``options`` go to :func:`parse_dcgmi_dmon` or
    :func:`parse_nvidia_smi_csv`.
    """
    if format == "auto":
        format = (
            "dcgmi"
            if any(DCGM_HEADER_RE.match(x) for x in iter_lines(path, strip_cr=True))
            else ("nvidia-smi")
        )
    if format == "dcgmi":
        return parse_dcgmi_dmon(path, **options)  # type: ignore[arg-type]
    if format == "nvidia-smi":
        return parse_nvidia_smi_csv(path, **options)  # type: ignore[arg-type]
    raise InputFileError(path, f"unknown power-log format {format!r}")


# --- alignment with steps ------------------------------------------------------------------------


def align_power_to_steps(power_df: pd.DataFrame, steps_df: pd.DataFrame) -> pd.DataFrame:
    """Mean power per GPU, and over GPUs, during each step interval.

    A step's interval runs from the previous step's timestamp (exclusive) to its own
    (inclusive); steps are ordered by timestamp and those without one are left out.

    Parameters
    ----------
    power_df
        :attr:`PowerLog.samples` (``timestamp``, ``gpu_index``, ``power_w``).
    steps_df
        :attr:`StepLog.steps` (``step``, ``timestamp``).

    Returns
    -------
    pandas.DataFrame
        One row per timed step: ``step``, ``interval_start``, ``interval_end``, ``interval_s``,
        ``n_samples`` (power rows in the interval, all GPUs), ``power_w_mean`` (mean over GPUs
        of each GPU's mean power, W), and ``power_w_gpu<k>`` per GPU. The first timed step has
        no interval, so NaN power.
    """
    steps = steps_df.loc[steps_df["timestamp"].notna(), ["step", "timestamp"]]
    steps = steps.sort_values("timestamp", kind="stable").reset_index(drop=True)
    ends = steps["timestamp"].to_numpy(dtype="datetime64[ns]")
    starts = np.concatenate((np.array(["NaT"], dtype="datetime64[ns]"), ends[:-1]))
    power = power_df.loc[power_df["timestamp"].notna() & power_df["gpu_index"].notna()]
    slot = np.searchsorted(ends, power["timestamp"].to_numpy(dtype="datetime64[ns]"), side="left")
    inside = (slot > 0) & (slot < len(ends))
    power = power.assign(slot=slot)[inside]
    per_gpu = power.pivot_table(index="slot", columns="gpu_index", values="power_w", aggfunc="mean")
    per_gpu = per_gpu.reindex(range(len(steps)))
    per_gpu.columns = [f"power_w_gpu{int(g)}" for g in per_gpu.columns]
    counts = power.groupby("slot").size().reindex(range(len(steps)), fill_value=0)
    out = pd.DataFrame(
        {
            "step": steps["step"].to_numpy(),
            "interval_start": starts,
            "interval_end": ends,
            "interval_s": (ends - starts) / np.timedelta64(1, "s"),
            "n_samples": counts.to_numpy(),
            "power_w_mean": per_gpu.mean(axis=1).to_numpy() if per_gpu.shape[1] else np.nan,
        }
    )
    return pd.concat([out, per_gpu.reset_index(drop=True)], axis=1)
