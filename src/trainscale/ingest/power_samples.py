"""The samples table both power-log formats produce, and the checks every power log gets.

:class:`PowerLog` is what :func:`trainscale.ingest.power_smi.parse_nvidia_smi_csv` and
:func:`~trainscale.ingest.power_dcgmi.parse_dcgmi_dmon` return; :func:`power_log` builds it from a
format's parsed rows: fixed leading columns, the ``power_w`` fallback to instant or average
power, and the checks (module docstring of :mod:`trainscale.ingest.power`): a negative reading or
a clock going back is an :class:`~trainscale.errors.InputFileError` naming the file and line;
polls lacking some GPU and gaps in the sampling are warnings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError

__all__ = ["GAP_FACTOR", "PowerFormat", "PowerLog", "power_log"]

PowerFormat = Literal["nvidia-smi", "dcgmi"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerLog:
    """The samples of one power log and how many data rows could not be read."""

    samples: pd.DataFrame
    """One row per (sample, GPU): ``sample`` (0-based poll number), ``timestamp``
    (datetime64[ns], naive as written; NaT when the log has none), ``gpu_index`` (Int64),
    ``power_w`` (W), then the log's other fields (e.g. ``util_gpu_pct``, ``mem_used_mib``,
    ``total_energy_j``), and ``line`` (1-based line number)."""
    skipped_lines: int
    """Data rows that could not be parsed in full."""
    path: str
    """The file read."""
    format: PowerFormat
    """``"nvidia-smi"`` or ``"dcgmi"``."""
    warnings: tuple[str, ...] = ()
    """Problems the samples survived, each naming the file and line: polls that lack some GPUs,
    gaps in the sampling (power rows missing?)."""


_POWER_COLUMNS = ("power_w", "power_instant_w", "power_average_w")
#: A sampling interval this many times the usual one means rows are missing.
GAP_FACTOR = 1.5


def _check_samples(samples: pd.DataFrame, path: str | Path, *, polls: bool) -> tuple[str, ...]:
    """Raise on negative power or a clock going back; return warnings (module docstring)."""
    for name in _POWER_COLUMNS:
        if name not in samples:
            continue
        negative = np.flatnonzero((samples[name] < 0).to_numpy(dtype=bool))
        if negative.size:
            first = negative[0]
            raise InputFileError(
                path,
                f"negative power {samples[name].iloc[first]:g} W ({name}); power must be >= 0",
                line=int(samples["line"].iloc[first]),
            )
    notes: list[str] = []
    stamps = samples["timestamp"]
    if stamps.notna().any():
        ns = stamps.astype("int64").to_numpy().astype(float)
        ns[stamps.isna().to_numpy()] = np.nan
        running = np.fmax.accumulate(np.where(np.isnan(ns), -np.inf, ns))
        back = np.flatnonzero(ns[1:] < running[:-1]) + 1
        if back.size:
            k = back[0]
            before = int(np.argmax(ns[:k] == running[k - 1]))
            raise InputFileError(
                path,
                f"the clock goes back: {stamps.iloc[k]} comes after {stamps.iloc[before]} "
                f"(line {samples['line'].iloc[before]}); timestamps must not decrease",
                line=int(samples["line"].iloc[k]),
            )
        notes += _gap_warnings(samples, path)
    if polls and samples["gpu_index"].notna().all():
        every = set(samples["gpu_index"].astype(int))
        sizes = samples.groupby("sample")["gpu_index"].nunique()
        short = sizes.index[sizes < len(every)]
        if len(short):
            lines = (
                samples.loc[samples["sample"].isin(short), "line"].groupby(samples["sample"]).min()
            )
            notes.append(
                f"{path}:{lines.iloc[0]}: {len(short)} poll(s) lack some of the "
                f"{len(every)} GPUs (rows missing?), first at line {lines.iloc[0]}"
            )
    return tuple(notes)


def _gap_warnings(samples: pd.DataFrame, path: str | Path) -> list[str]:
    timed = samples[samples["timestamp"].notna() & samples["gpu_index"].notna()]
    worst: tuple[float, float, int] | None = None
    for _, group in timed.groupby("gpu_index"):
        gaps = group["timestamp"].diff().dt.total_seconds().to_numpy()[1:]
        if gaps.size < 2:
            continue
        usual = float(np.median(gaps))
        if usual <= 0:
            continue
        long = np.flatnonzero(gaps > GAP_FACTOR * usual)
        if long.size and (worst is None or gaps[long].max() > worst[0]):
            k = long[np.argmax(gaps[long])]
            worst = (float(gaps[k]), usual, int(group["line"].iloc[k + 1]))
    if worst is None:
        return []
    return [
        f"{path}:{worst[2]}: a {worst[0]:g} s gap in the power samples (usually every "
        f"{worst[1]:g} s): rows missing?"
    ]


def _finish(frame: pd.DataFrame) -> pd.DataFrame:
    """Fixed leading columns, ``power_w`` fallback to instant/average power, Int64 index."""
    if "power_w" not in frame:
        for fallback in ("power_instant_w", "power_average_w"):
            if fallback in frame:
                frame["power_w"] = frame[fallback]
                break
        else:
            frame["power_w"] = np.nan
    frame["gpu_index"] = pd.array(frame["gpu_index"], dtype="Int64")
    lead = ["sample", "timestamp", "gpu_index", "power_w"]
    rest = [c for c in frame.columns if c not in lead and c != "line"]
    return frame[[*lead, *rest, "line"]].reset_index(drop=True)


def power_log(
    frame: pd.DataFrame, path: str | Path, *, skipped: int, format: PowerFormat, polls: bool
) -> PowerLog:
    """The :class:`PowerLog` of a format's parsed rows (``frame``: ``sample``, ``timestamp``,
    ``gpu_index``, the power and other columns, ``line``), checked; ``polls``: the log states
    each row's GPU (nvidia-smi ``index``), so a poll lacking some GPU is a warning."""
    samples = _finish(frame)
    return PowerLog(
        samples=samples,
        skipped_lines=skipped,
        path=str(path),
        format=format,
        warnings=_check_samples(samples, path, polls=polls),
    )
