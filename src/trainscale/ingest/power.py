"""GPU power logs: ``nvidia-smi --query-gpu … --format=csv`` and ``dcgmi dmon``.

Reference: ../shared/reference/log-formats.md §2.1 (nvidia-smi CSV: ``field [unit]`` header,
units inside values unless ``nounits``, ``[N/A]`` / ``[Not Supported]``, ``noheader``; without
``index`` the GPU is the row's position within its poll block — rows of one poll need not share
a timestamp) and §2.2 (dcgmi dmon: ``#Entity`` header and units row repeating, two-token entity
``GPU 0``, ``N/A`` and DCGM blank sentinels, no timestamps).

Output: one row per (sample, GPU) with ``timestamp``, ``gpu_index`` and ``power_w``, plus the
utilisation / memory / clock columns the log has, units in their names. A data row that cannot
be parsed in full is skipped and counted; missing-value markers become NaN.

Checked (:func:`_check_samples`): a negative power reading, or timestamps that go back down the
file (a clock that jumped back), is an :class:`~trainscale.errors.InputFileError` naming the
file and line; polls that lack some GPU, and gaps in the sampling longer than 1.5 times the
usual interval, are kept with a warning (:attr:`PowerLog.warnings`). Power above the GPU's TDP
is checked where the GPU is known (:mod:`trainscale.ingest.runs`).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._text import iso_to_datetime_ns, iter_lines

__all__ = [
    "PowerLog",
    "align_power_to_steps",
    "parse_dcgmi_dmon",
    "parse_nvidia_smi_csv",
    "parse_power_log",
]

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


# --- nvidia-smi CSV ------------------------------------------------------------------------

#: nvidia-smi query field → output column (numbers unless listed in _TEXT_FIELDS).
_SMI_FIELDS: dict[str, str] = {
    "timestamp": "timestamp",
    "index": "gpu_index",
    "power.draw": "power_w",
    "power.draw.instant": "power_instant_w",
    "power.draw.average": "power_average_w",
    "power.limit": "power_limit_w",
    "enforced.power.limit": "enforced_power_limit_w",
    "utilization.gpu": "util_gpu_pct",
    "utilization.memory": "util_mem_pct",
    "memory.used": "mem_used_mib",
    "memory.total": "mem_total_mib",
    "memory.free": "mem_free_mib",
    "temperature.gpu": "temp_gpu_c",
    "temperature.memory": "temp_mem_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
    "clocks.gr": "graphics_clock_mhz",
    "clocks.current.graphics": "graphics_clock_mhz",
    "name": "gpu_name",
    "pci.bus_id": "pci_bus_id",
    "uuid": "uuid",
    "serial": "serial",
    "pstate": "pstate",
}
#: Text fields and what a well-formed value looks like (a damaged id would invent a GPU).
_TEXT_FIELDS: dict[str, re.Pattern[str]] = {
    "name": re.compile(r"^[\w .()/+-]+$"),
    "pci.bus_id": re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$"),
    "uuid": re.compile(r"^(?:GPU|MIG)-[0-9A-Fa-f-]+$"),
    "serial": re.compile(r"^\d+$|^\[[^\]]*\]$"),
    "pstate": re.compile(r"^P\d{1,2}$|^\[[^\]]*\]$"),
}
_ID_FIELDS = ("uuid", "pci.bus_id", "serial")
_UNIT_SUFFIX = {"w": "w", "%": "pct", "mib": "mib", "mhz": "mhz", "c": "c", "j": "j", "s": "s"}

_HEADER_FIELD_RE = re.compile(r"^([a-z_][a-z0-9_.]*)(?:\s*\[([^\]]*)\])?$", re.IGNORECASE)
_VALUE_RE = re.compile(r"^([-+]?\d+(?:\.\d+)?)(?:\s*([A-Za-z%]+))?$")
#: nvidia-smi's ``YYYY/MM/DD HH:MM:SS.mmm``, or ISO 8601 ``YYYY-MM-DDTHH:MM:SS[.fff]`` (a
#: wrapper script's ``date --iso-8601``), naive: the step logs' stamps carry no zone either.
_SMI_TIME_RE = re.compile(r"^\d{4}([/-])\d{2}\1\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?$")
_ZONE_RE = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$")
_TIME_FORMS = (
    "'YYYY/MM/DD HH:MM:SS[.fff]' (nvidia-smi) or ISO 8601 'YYYY-MM-DD[T ]HH:MM:SS[.fff]' "
    "without a time zone"
)
#: Power units a header may state, → factor to watts.
_POWER_UNITS = {"w": 1.0, "": 1.0, "mw": 1e-3, "kw": 1e3}
_MAX_GPUS_PER_POLL = 64


def _split_header(line: str) -> list[tuple[str, str]] | None:
    """(field, unit) pairs of a header line, or None if the line is not a header."""
    fields = []
    for part in line.split(","):
        match = _HEADER_FIELD_RE.match(part.strip())
        if match is None:
            return None
        fields.append((match.group(1).lower(), (match.group(2) or "").strip()))
    return fields if any(f in _SMI_FIELDS or "." in f for f, _ in fields) else None


def _column_name(field: str, unit: str) -> str:
    if field in _SMI_FIELDS:
        return _SMI_FIELDS[field]
    base = re.sub(r"[^a-z0-9]+", "_", field.lower()).strip("_")
    suffix = _UNIT_SUFFIX.get(unit.lower())
    return f"{base}_{suffix}" if suffix else base


def _number(text: str, unit: str) -> tuple[float, bool] | None:
    """Parse ``557.69 W`` / ``557.69`` → (value, unit written?); NaN for ``[N/A]`` etc.;
    None when garbled or when the written unit is not the header's."""
    value = text.strip()
    if (value.startswith("[") and value.endswith("]")) or value == "N/A":
        return np.nan, False
    match = _VALUE_RE.match(value)
    if match is None:
        return None
    found_unit = match.group(2)
    if found_unit is not None and found_unit.lower() != unit.lower():
        return None
    return float(match.group(1)), found_unit is not None


def _smi_row(parts: list[str], fields: list[tuple[str, str]]) -> tuple[dict, tuple] | None:
    """The row's values, and for each numeric field with a unit whether the value wrote it."""
    row: dict = {}
    units: list[bool | None] = []
    for text, (field, unit) in zip(parts, fields, strict=True):
        value = text.strip()
        if field == "timestamp":
            if not _SMI_TIME_RE.match(value):
                return None
            row["timestamp"] = value
        elif field in _TEXT_FIELDS:
            if not _TEXT_FIELDS[field].match(value):
                return None
            row[_column_name(field, unit)] = value
        else:
            parsed = _number(value, unit)
            if parsed is None:
                return None
            row[_column_name(field, unit)] = parsed[0]
            units.append(parsed[1] if unit and not np.isnan(parsed[0]) else None)
    index = row.get("gpu_index")
    if index is not None and not (0 <= index < 2**31 and index == int(index)):
        return None
    return row, tuple(units)


def parse_nvidia_smi_csv(
    path: str | Path,
    *,
    columns: Sequence[str] | None = None,
    gpus_per_poll: int | None = None,
) -> PowerLog:
    """Parse ``nvidia-smi --query-gpu=… --format=csv[,nounits][,noheader]`` output.

    Parameters
    ----------
    path
        The captured CSV.
    columns
        The ``--query-gpu`` field list, required for ``noheader`` output (e.g.
        ``["timestamp", "power.draw", "utilization.gpu"]``); ignored when the file has a header.
    gpus_per_poll
        GPUs per poll block when ``index`` was not queried. If None, the GPU is taken from
        ``uuid``/``pci.bus_id``/``serial`` when queried, else the block size is inferred from the
        timestamps (the largest block size whose gaps inside blocks are all shorter than the
        gaps between blocks).

    Returns
    -------
    PowerLog
        ``format = "nvidia-smi"``. ``power_w`` is ``power.draw``, or ``power.draw.instant`` /
        ``power.draw.average`` when only those were queried.

    Raises
    ------
    InputFileError
        Not text; no header and no ``columns``; no parseable data row; the GPU of each row
        cannot be determined; ``gpus_per_poll`` < 1.
    """
    if gpus_per_poll is not None and gpus_per_poll < 1:
        raise InputFileError(path, f"gpus_per_poll must be at least 1, not {gpus_per_poll}")
    fields, first = _smi_fields(iter_lines(path, strip_cr=True), columns, path)
    table = _SmiColumns(fields)
    skipped = 0
    for number, line in enumerate(iter_lines(path, strip_cr=True), start=1):
        if number <= first or not line.strip() or _split_header(line) is not None:
            continue
        parts = line.split(",")
        if len(parts) != len(fields):
            skipped += 1
            continue
        table.slots.append(number)
        parsed = _smi_row(parts, fields)
        if parsed is None:
            skipped += 1
            continue
        table.add(parsed[0], parsed[1], number)
    consistent = table.units_consistent()
    skipped += int(np.count_nonzero(~consistent))
    if not consistent.any():
        lines = iter_lines(path, strip_cr=True)
        raise InputFileError(path, "no nvidia-smi data row could be parsed" + _why(lines, fields))
    frame = _to_watts(table.frame()[consistent].reset_index(drop=True), fields, path)
    slots = np.frombuffer(table.slots, dtype=np.int64)
    frame = _smi_gpu_index(frame, fields, slots, gpus_per_poll, path)
    samples = _finish(frame)
    return PowerLog(
        samples=samples,
        skipped_lines=skipped,
        path=str(path),
        format="nvidia-smi",
        warnings=_check_samples(samples, path, polls="index" in {f for f, _ in fields}),
    )


#: Rows whose timestamps are parsed together.
_CHUNK_ROWS = 65_536


class _SmiColumns:
    """The parsed rows of an nvidia-smi CSV, column by column: numbers in typed arrays (8 bytes
    a value), text in lists, each row's unit flags as two bytes, so that a 10^6-line log is not
    held as 10^6 dicts."""

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self.order = [_column_name(f, u) for f, u in fields]  # the columns in field order
        self.text = {_column_name(f, u): [] for f, u in fields if f in _TEXT_FIELDS}
        self.has_timestamp = any(f == "timestamp" for f, _ in fields)
        self.stamp_ns = array("q")
        self.pending_stamps: list[str] = []
        self.numbers = {
            _column_name(f, u): array("d")
            for f, u in fields
            if f != "timestamp" and f not in _TEXT_FIELDS
        }
        self.line = array("q")
        self.slots = array("q")
        self.wrote_unit = bytearray()
        self.lacked_unit = bytearray()

    def add(self, row: dict, units: tuple, number: int) -> None:
        if self.has_timestamp:
            self.pending_stamps.append(row["timestamp"])
            if len(self.pending_stamps) >= _CHUNK_ROWS:
                self.flush()
        for column, values in self.text.items():
            values.append(row[column])
        for column, numbers in self.numbers.items():
            numbers.append(row[column])
        self.line.append(number)
        self.wrote_unit.append(any(flag is True for flag in units))
        self.lacked_unit.append(any(flag is False for flag in units))

    def units_consistent(self) -> np.ndarray:
        """Rows whose values carry units the way the file does. A file is ``csv`` (every value
        of a field with a header unit writes it) or ``csv,nounits`` (none does); no damage can
        add a valid unit, so one written unit anywhere means ``csv``, and a value without its
        unit there was cut short."""
        wrote = np.frombuffer(self.wrote_unit, dtype=bool)
        lacked = np.frombuffer(self.lacked_unit, dtype=bool)
        return ~lacked if wrote.any() else ~wrote

    def flush(self) -> None:
        """Parse the pending timestamp texts into :attr:`stamp_ns` (NaT as int64 min)."""
        if self.pending_stamps:
            texts = pd.Series(self.pending_stamps, dtype=object).str.replace("/", "-", regex=False)
            self.stamp_ns.extend(iso_to_datetime_ns(texts).to_numpy().view(np.int64))
            self.pending_stamps.clear()

    def frame(self) -> pd.DataFrame:
        """The rows as a table; ``timestamp`` parsed (NaT throughout without the field)."""
        self.flush()
        parts: dict[str, object] = {c: pd.Series(v, dtype=object) for c, v in self.text.items()}
        parts |= {c: np.frombuffer(v, dtype=np.float64) for c, v in self.numbers.items()}
        if self.has_timestamp:
            parts["timestamp"] = np.frombuffer(self.stamp_ns, dtype=np.int64).view("M8[ns]")
        columns = {c: parts[c] for c in self.order if c in parts}
        columns["line"] = np.frombuffer(self.line, dtype=np.int64)
        columns.setdefault("timestamp", np.full(len(self.line), np.datetime64("NaT", "ns")))
        return pd.DataFrame(columns)


def _why(lines: Iterable[str], fields: list[tuple[str, str]]) -> str:
    """Why the first data row was refused, where it is the timestamp (else '')."""
    names = [f for f, _ in fields]
    if "timestamp" not in names:
        return ""
    where = names.index("timestamp")
    for number, line in enumerate(lines, start=1):
        parts = line.split(",")
        if len(parts) != len(fields) or _split_header(line) is not None:
            continue
        stamp = parts[where].strip()
        if _SMI_TIME_RE.match(stamp):
            return ""
        zone = " (it has a time zone)" if _ZONE_RE.search(stamp) else ""
        return f": line {number}: timestamp {stamp!r}{zone} is not {_TIME_FORMS}"
    return ""


def _to_watts(frame: pd.DataFrame, fields: list[tuple[str, str]], path: str | Path) -> pd.DataFrame:
    """Power columns in W: a header unit of mW or kW is converted; any other is an error."""
    for field, unit in fields:
        column = _SMI_FIELDS.get(field, "")
        if not field.startswith("power.") and not field.endswith("power.limit"):
            continue
        factor = _POWER_UNITS.get(unit.lower())
        if factor is None:
            raise InputFileError(
                path, f"header: {field} [{unit}] is not a power unit; allowed: W, mW, kW"
            )
        if factor != 1.0 and column in frame:
            frame[column] = frame[column] * factor
    return frame


def _smi_fields(
    lines: Iterable[str], columns: Sequence[str] | None, path: str | Path
) -> tuple[list[tuple[str, str]], int]:
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        header = _split_header(line)
        if header is not None:
            return header, index + 1
        break
    if not columns:
        raise InputFileError(
            path, "no header line (noheader output): pass the --query-gpu field list as columns"
        )
    fields = []
    for name in columns:
        match = _HEADER_FIELD_RE.match(name.strip())
        if match is None:
            raise InputFileError(path, f"columns: {name!r} is not an nvidia-smi query field")
        fields.append((match.group(1).lower(), (match.group(2) or "").strip()))
    return fields, 0


def _smi_gpu_index(
    frame: pd.DataFrame,
    fields: list[tuple[str, str]],
    slots: np.ndarray,
    gpus_per_poll: int | None,
    path: str | Path,
) -> pd.DataFrame:
    names = {f for f, _ in fields}
    if "index" in names:
        index = frame["gpu_index"].astype(np.int64)
        frame["sample"] = (index.diff().fillna(-1) <= 0).cumsum() - 1
        return frame
    for field in _ID_FIELDS:
        if field in names:
            column = _column_name(field, "")
            codes = pd.factorize(frame[column])[0]
            frame["gpu_index"] = codes
            frame["sample"] = frame.groupby(codes).cumcount()
            return frame
    position = np.searchsorted(slots, frame["line"].to_numpy())  # slots ascend, hold every line
    n = gpus_per_poll or _infer_gpus_per_poll(frame, position, len(slots), path)
    frame["gpu_index"] = position % n
    frame["sample"] = position // n
    return frame


def _infer_gpus_per_poll(
    frame: pd.DataFrame, position: np.ndarray, n_slots: int, path: str | Path
) -> int:
    """Largest block size n whose in-block timestamp gaps are all below the between-block gaps."""
    ns = np.full(n_slots, np.nan)
    stamps = frame["timestamp"]
    ns[position] = np.where(stamps.isna(), np.nan, stamps.astype("int64").to_numpy())
    gaps = np.diff(ns)
    if n_slots < 2 or np.all(np.isnan(gaps)):
        raise InputFileError(
            path,
            "cannot tell which GPU each row is: no 'index' field and no timestamps; "
            "pass gpus_per_poll",
        )
    best = 1
    for n in range(2, min(_MAX_GPUS_PER_POLL, n_slots // 2) + 1):
        boundary = (np.arange(gaps.size) % n) == n - 1
        inside, between = gaps[~boundary], gaps[boundary]
        if np.all(np.isnan(between)) or np.all(np.isnan(inside)):
            continue
        if np.nanmax(inside) < np.nanmin(between):
            best = n
    return best


# --- dcgmi dmon ------------------------------------------------------------------------------

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

_DCGM_HEADER_RE = re.compile(r"^\s*#\s*Entity\b")
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
        if _DCGM_HEADER_RE.match(line):
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
    samples = _finish(frame)
    return PowerLog(
        samples=samples,
        skipped_lines=skipped,
        path=str(path),
        format="dcgmi",
        warnings=_check_samples(samples, path, polls=False),
    )


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


# --- shared ------------------------------------------------------------------------------------

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
            if any(_DCGM_HEADER_RE.match(x) for x in iter_lines(path, strip_cr=True))
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
