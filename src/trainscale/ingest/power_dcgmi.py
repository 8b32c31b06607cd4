"""``dcgmi dmon`` power logs.

Reference: ../shared/reference/log-formats.md §2.2: an ``#Entity`` header and a units row that
may repeat, two-token entities (``GPU 0``, ``GPU-I 3``), ``N/A`` and DCGM's blank sentinels as
missing values, and no timestamps (the manifest gives ``start_time`` and ``interval_s``).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._text import iter_lines
from trainscale.ingest.power_samples import PowerLog, power_log

__all__ = ["DCGM_HEADER_RE", "parse_dcgmi_dmon"]

#: dmon column tag → (output column, divisor to the column's unit).
_DCGM_TAGS: dict[str, tuple[str, float]] = {
    "POWER": ("power_w", 1.0),
    "TOTEC": ("total_energy_j", 1000.0),  # mJ → J
    "GPUTL": ("util_gpu_pct", 1.0),
    "MCUTL": ("util_mem_copy_pct", 1.0),
    "FBUSD": ("mem_used_mib", 1.0),
    "FBFRE": ("mem_free_mib", 1.0),
    "SMCLK": ("sm_clock_mhz", 1.0),
    "MMCLK": ("mem_clock_mhz", 1.0),
    "TMPTR": ("temp_gpu_c", 1.0),
    "MMTMP": ("temp_mem_c", 1.0),
    "GRACT": ("graphics_active", 1.0),
    "SMACT": ("sm_active", 1.0),
    "SMOCC": ("sm_occupancy", 1.0),
    "TENSO": ("tensor_active", 1.0),
    "DRAMA": ("dram_active", 1.0),
    "PCITX": ("pcie_tx_bytes_per_s", 1.0),
    "PCIRX": ("pcie_rx_bytes_per_s", 1.0),
    "NVLTX": ("nvlink_tx_bytes_per_s", 1.0),
    "NVLRX": ("nvlink_rx_bytes_per_s", 1.0),
}

DCGM_HEADER_RE = re.compile(r"^\s*#\s*Entity\b")
_DCGM_UNITS_RE = re.compile(r"^\s*ID\b")
_DCGM_ROW_RE = re.compile(r"^\s*(GPU(?:-[A-Z]+)?|CPU(?:-[A-Z]+)?|Switch|Link)\s+(\d{1,9})(?:\s|$)")
_DCGM_INT_RE = re.compile(r"^[-+]?\d{1,20}$")
_DCGM_FLOAT_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")

# DCGM blank values (dcgm_structs.h): int32 0x7ffffff0-0x7fffffff, int64 0x7ffffffffffffff0-…ff,
# fp64 2**47 (+0..3). A counter such as TOTEC can legitimately exceed 2**31, so only these
# exact ranges mean "no value".
_BLANK_INT_RANGES = ((0x7FFFFFF0, 0x7FFFFFFF), (0x7FFFFFFFFFFFFFF0, 0x7FFFFFFFFFFFFFFF))
_BLANK_FLOATS = {float(2**47 + k) for k in range(4)}


def _dcgm_value(token: str) -> float | None:
    if token == "N/A":
        return np.nan
    if _DCGM_INT_RE.match(token):
        value = int(token)
        if any(lo <= value <= hi for lo, hi in _BLANK_INT_RANGES):
            return np.nan
        return float(value)
    if _DCGM_FLOAT_RE.match(token):
        value = float(token)
        return np.nan if value in _BLANK_FLOATS else value
    return None


def _dcgm_column(tag: str) -> tuple[str, float]:
    return _DCGM_TAGS.get(tag.upper(), (re.sub(r"[^a-z0-9]+", "_", tag.lower()), 1.0))


def parse_dcgmi_dmon(
    path: str | Path,
    *,
    start_time: str | datetime | pd.Timestamp | None = None,
    interval_s: float = 1.0,
) -> PowerLog:
    """Parse ``dcgmi dmon -e …`` text output.

    Parameters
    ----------
    path
        The captured output (header and units rows may repeat).
    start_time
        Wall-clock time of the first sample (naive); dmon prints no timestamps. None → NaT.
    interval_s
        Sampling interval in seconds (``dcgmi dmon -d`` is in ms; default 1000 ms).

    Returns
    -------
    PowerLog
        ``format = "dcgmi"``; ``entity`` (``GPU``, ``GPU-I`` …) and ``entity_id`` columns are
        kept; ``gpu_index`` is the entity id for ``GPU`` rows and NA otherwise; ``TOTEC`` (mJ)
        becomes ``total_energy_j``. A new sample starts when an entity repeats.

    Raises
    ------
    InputFileError
        Not text, no ``#Entity`` header, or no parseable data row.
    """
    if interval_s <= 0 or not np.isfinite(interval_s):
        raise InputFileError(
            path, f"interval_s must be a positive number of seconds, not {interval_s}"
        )
    rows, skipped, tags = [], 0, None
    for number, line in enumerate(iter_lines(path, strip_cr=True), start=1):
        if DCGM_HEADER_RE.match(line):
            tags = line.split("#", 1)[1].split()[1:]
            continue
        entity = _DCGM_ROW_RE.match(line)
        if entity is None or _DCGM_UNITS_RE.match(line):
            continue
        row = _dcgm_row(line, tags)
        if row is None:
            skipped += 1
            continue
        rows.append(
            {"entity": entity.group(1), "entity_id": int(entity.group(2)), "line": number, **row}
        )
    if not rows:
        raise InputFileError(
            path,
            "no dcgmi dmon data row could be parsed (need a '#Entity' "
            "header followed by rows such as 'GPU 0  120.5 …')",
        )
    frame = pd.DataFrame(rows)
    frame["sample"] = _dcgm_samples(frame)
    frame["timestamp"] = _dcgm_timestamps(frame["sample"], start_time, interval_s, path)
    is_gpu = frame["entity"] == "GPU"
    frame["gpu_index"] = pd.array(frame["entity_id"].where(is_gpu), dtype="Int64")
    return power_log(frame, path, skipped=skipped, format="dcgmi", polls=False)


def _dcgm_row(line: str, tags: list[str] | None) -> dict | None:
    tokens = line.split()
    if tags is None or len(tokens) != len(tags) + 2 or not tokens[1].isdigit():
        return None
    row = {}
    for tag, token in zip(tags, tokens[2:], strict=True):
        value = _dcgm_value(token)
        if value is None:
            return None
        column, divisor = _dcgm_column(tag)
        row[column] = value / divisor
    return row


def _dcgm_samples(frame: pd.DataFrame) -> np.ndarray:
    sample, seen, out = 0, set(), []
    for key in zip(frame["entity"], frame["entity_id"], strict=True):
        if key in seen:
            sample, seen = sample + 1, set()
        seen.add(key)
        out.append(sample)
    return np.asarray(out, dtype=np.int64)


def _dcgm_timestamps(
    sample: pd.Series, start_time: object, interval_s: float, path: str | Path
) -> pd.Series:
    if start_time is None:
        return pd.Series(pd.NaT, index=sample.index, dtype="datetime64[ns]")
    try:
        start = pd.Timestamp(start_time)
    except (ValueError, TypeError) as error:
        raise InputFileError(path, f"start_time {start_time!r} is not a time: {error}") from None
    if start.tzinfo is not None:
        raise InputFileError(path, "start_time must be naive (no time zone), like the logs")
    try:
        offsets = pd.to_timedelta(sample.to_numpy() * interval_s, unit="s")
        return pd.Series(start + offsets, index=sample.index).astype("datetime64[ns]")
    except (OverflowError, pd.errors.OutOfBoundsDatetime, pd.errors.OutOfBoundsTimedelta):
        raise InputFileError(
            path, "start_time + samples x interval_s is out of the representable time range"
        ) from None
