"""``nvidia-smi --query-gpu … --format=csv[,nounits][,noheader]`` power logs.

Reference: ../shared/reference/log-formats.md §2.1: a ``field [unit]`` header, units inside
values unless ``nounits``, ``[N/A]`` / ``[Not Supported]`` as missing values, ``noheader``
output (the field list given as ``columns``); without ``index`` the GPU is taken from
``uuid``/``pci.bus_id``/``serial``, else from the row's position within its poll block — rows of
one poll need not share a timestamp. Read line by line into typed column arrays
(:class:`_SmiColumns`), so a 10^6-line log is not held as 10^6 dicts.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._text import iso_to_datetime_ns, iter_lines
from trainscale.ingest.power_samples import PowerLog, power_log

__all__ = ["parse_nvidia_smi_csv"]

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
    polls = "index" in {f for f, _ in fields}
    return power_log(frame, path, skipped=skipped, format="nvidia-smi", polls=polls)


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
