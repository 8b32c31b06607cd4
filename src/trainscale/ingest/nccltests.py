"""nccl-tests results: stdout tables and the JSON report.

Reference: ../shared/reference/log-formats.md §3 (``NVIDIA/nccl-tests`` ``src/common.cu`` and
``src/util.cu``): device lines ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [PCI] name``
(older releases without ``Group``), a two-line result header whose column names are read rather
than assumed (``#wrong`` or the older ``error``, with or without ``redop``/``root``, optional
per-iteration ``i_*`` columns and a trailing ``timestamp``), whitespace-separated rows,
MPI prefixes such as ``[1,0]<stdout>:`` and interleaved ``NCCL INFO`` lines. The JSON report
(``results`` with ``out_of_place``/``in_place`` objects) is read too.

Units: ``size_bytes`` bytes (total buffer, see nccl-tests PERFORMANCE.md), ``time_us`` µs,
``algbw_gbytes_per_s``/``busbw_gbytes_per_s`` GB/s = 10⁹ bytes/s.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._collectives import canonical_collective
from trainscale.ingest._text import parse_json, read_lines, read_text
from trainscale.schema import NCCL_COLUMNS, names

__all__ = ["NcclTestsLog", "parse_nccl_tests"]


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestsLog:
    """The result rows of one nccl-tests output and the rows that could not be read."""

    results: pd.DataFrame
    """One row per message size (and test), columns :data:`trainscale.schema.NCCL_COLUMNS`
    (more between ``gpu_name`` and ``line`` when the output has them): ``test`` (e.g.
    ``all_reduce_perf``), ``collective`` (canonical: ``allreduce``, ``allgather``,
    ``reducescatter``…), ``size_bytes``, ``count`` (elements), ``dtype``, ``redop`` and ``root`` (NA
    when the release has no such column), out-of-place ``time_us``, ``algbw_gbytes_per_s``,
    ``busbw_gbytes_per_s``, ``wrong`` (wrong elements, NaN when validation is off), the same with an
    ``inplace_`` prefix, ``num_ranks`` and ``num_nodes`` (distinct ranks and hostnames of the device
    lines, NA without them), ``gpu_name``, ``line`` (1-based; NA for JSON). Older outputs add
    ``max_error``/``inplace_max_error`` instead of ``wrong``; per-iteration timing adds
    ``i_min_us``, ``i_max_us``, ``i_p99_us``, ``i_cv_pct`` (and ``inplace_`` ones)."""
    skipped_lines: int
    """Result rows that could not be parsed in full."""
    path: str
    """The file read."""
    format: Literal["text", "json"]
    """``"text"`` (stdout) or ``"json"`` (``-J``/JSON report)."""


_PREFIX_RE = re.compile(r"^\s*(?:\[\d+,\d+\]<(?:stdout|stderr)>:|\d+:\s)")
_DEVICE_RE = re.compile(
    r"#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
    r"\[[^\]]*\]\s+(.*?)\s*$"
)
_STARTING_RE = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_CONCLUDED_RE = re.compile(r"#\s*Collective test concluded:\s*(\S+)")
_TEST_NAME_RE = re.compile(r"([a-z][a-z0-9_]*_perf)(?:_mpi)?\b")
_INT_RE = re.compile(r"^[-+]?\d{1,18}$")
_FLOAT_RE = re.compile(
    r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:nan|inf)$", re.IGNORECASE
)
_ROW_START_RE = re.compile(r"^\s*\d")  # a result row, or what is left of one
_NCCL_LOG_RE = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")  # e.g. "10-0-0-1:12:34 [0] NCCL INFO"
_WORD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: header token → output column (before the ``inplace_`` prefix).
_HALF_COLUMNS = {
    "time": "time_us",
    "cputime": "time_us",
    "algbw": "algbw_gbytes_per_s",
    "busbw": "busbw_gbytes_per_s",
    "#wrong": "wrong",
    "error": "max_error",
    "i_min": "i_min_us",
    "i_max": "i_max_us",
    "i_p99": "i_p99_us",
    "i_cv%": "i_cv_pct",
}
_LEAD_COLUMNS = {
    "size": "size_bytes",
    "count": "count",
    "type": "dtype",
    "redop": "redop",
    "root": "root",
}


@dataclass(frozen=True, slots=True)
class _Header:
    columns: tuple[str, ...]
    """Output column per value token (the timestamp, if any, is not included)."""
    timestamp: bool


def _header(tokens: list[str]) -> _Header | None:
    """Column layout from the ``#  size  count  type …`` header tokens."""
    times = [i for i, t in enumerate(tokens) if t in {"time", "cputime"}]
    if len(times) != 2 or tokens[:1] != ["size"] or "count" not in tokens[: times[0]]:
        return None
    lead, first, second = tokens[: times[0]], tokens[times[0] : times[1]], tokens[times[1] :]
    timestamp = bool(second) and second[-1] == "timestamp"
    second = second[:-1] if timestamp else second
    if any(t not in _LEAD_COLUMNS for t in lead) or len(first) != len(second):
        return None
    if any(t not in _HALF_COLUMNS for t in (*first, *second)):
        return None
    columns = (
        *[_LEAD_COLUMNS[t] for t in lead],
        *[_HALF_COLUMNS[t] for t in first],
        *["inplace_" + _HALF_COLUMNS[t] for t in second],
    )
    return _Header(columns=columns, timestamp=timestamp)


def _value(column: str, token: str) -> object:
    """Typed value of one token, or raise ValueError when it does not fit the column."""
    if column in {"dtype", "redop"}:
        if not _WORD_RE.match(token):
            raise ValueError(token)
        return token
    if column in {"size_bytes", "count", "root"}:
        if not _INT_RE.match(token):
            raise ValueError(token)
        return int(token)
    if token == "N/A" and column.endswith(("wrong", "max_error")):
        return np.nan
    if not _FLOAT_RE.match(token):
        raise ValueError(token)
    number = float(token)
    if column.endswith("wrong") and not (number >= 0 and number == int(number)):
        raise ValueError(token)
    return number


def _row(tokens: list[str], header: _Header) -> dict | None:
    if header.timestamp:
        if len(tokens) < 2:
            return None
        tokens = tokens[:-2]
    if len(tokens) != len(header.columns):
        return None
    try:
        row = {c: _value(c, t) for c, t in zip(header.columns, tokens, strict=True)}
    except ValueError:
        return None
    return row if row["size_bytes"] >= 0 and row["count"] >= 0 else None


def _strip(line: str) -> str:
    return _PREFIX_RE.sub("", line, count=1)


def _parse_text(path: str | Path, collective: str | None) -> NcclTestsLog:
    lines = read_lines(path)
    header: _Header | None = None
    rows: list[dict] = []
    skipped, section, test = 0, 0, None
    ranks: dict[int, tuple[str, str]] = {}
    for number, raw in enumerate(lines, start=1):
        line = _strip(raw)
        if (device := _DEVICE_RE.search(line)) is not None:
            ranks[int(device.group(1))] = (device.group(2), device.group(3))
        elif (starting := _STARTING_RE.search(line)) is not None:
            section, test = section + 1, starting.group(1)
        elif (concluded := _CONCLUDED_RE.search(line)) is not None:
            for row in rows:
                if row["section"] == section and row["test"] is None:
                    row["test"] = concluded.group(1)
            section, test = section + 1, None
        elif line.lstrip().startswith("#"):
            header = _header(line.lstrip()[1:].split()) or header
        elif header is not None and _ROW_START_RE.match(line) and not _NCCL_LOG_RE.search(line):
            row = _row(line.split(), header)
            if row is None:
                skipped += 1
                continue
            rows.append({**row, "test": test, "section": section, "line": number})
    if not rows:
        raise InputFileError(
            path,
            "no nccl-tests result row could be parsed (expected a "
            "'#  size  count  type …' header followed by numeric rows)",
        )
    fallback = _fallback_test(path, collective, lines)
    for row in rows:
        row["test"] = row["test"] or fallback
    return NcclTestsLog(
        results=_finish(rows, ranks), skipped_lines=skipped, path=str(path), format="text"
    )


def _fallback_test(path: str | Path, collective: str | None, lines: list[str]) -> str:
    """The test name from ``collective=``, a command line in the log, or the file name."""
    if collective:
        return collective
    for text in (*lines[:50], Path(path).name):
        match = _TEST_NAME_RE.search(text)
        if match:
            return match.group(1)
    return "unknown"


def _finish(rows: list[dict], ranks: dict[int, tuple[str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows).drop(columns="section", errors="ignore")
    frame["collective"] = [canonical_collective(t) for t in frame["test"]]
    frame["num_ranks"] = pd.array([len(ranks) or pd.NA] * len(frame), dtype="Int64")
    hosts = {host for host, _ in ranks.values()}
    frame["num_nodes"] = pd.array([len(hosts) or pd.NA] * len(frame), dtype="Int64")
    gpu_names = Counter(name for _, name in ranks.values() if name)
    frame["gpu_name"] = pd.array(
        [gpu_names.most_common(1)[0][0] if gpu_names else pd.NA] * len(frame), dtype="string"
    )
    leading = names(NCCL_COLUMNS)
    for column in leading:
        if column not in frame:
            frame[column] = pd.NA if column in {"redop", "root", "line"} else np.nan
    frame["root"] = pd.array(frame["root"], dtype="Int64")
    frame["line"] = pd.array(frame["line"], dtype="Int64")
    extra = [c for c in frame.columns if c not in leading]
    return frame[[*leading[:-1], *extra, "line"]]


# --- JSON report -------------------------------------------------------------------------------


def _parse_json(path: str | Path, collective: str | None) -> NcclTestsLog:
    text = read_text(path)
    document = parse_json(text, path)
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        raise InputFileError(path, "not an nccl-tests JSON report: no 'results' list")
    test = collective or _json_test(document) or _fallback_test(path, None, [])
    rows, skipped = [], 0
    for entry in results:
        row = _json_row(entry)
        if row is None:
            skipped += 1
            continue
        rows.append({**row, "test": test, "line": pd.NA})
    if not rows:
        raise InputFileError(path, "no nccl-tests result could be parsed from 'results'")
    return NcclTestsLog(
        results=_finish(rows, _json_ranks(document)),
        skipped_lines=skipped,
        path=str(path),
        format="json",
    )


def _json_test(document: dict) -> str | None:
    args = document.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        match = _TEST_NAME_RE.search(Path(args[0]).name)
        if match:
            return match.group(1)
    return None


def _json_ranks(document: dict) -> dict[int, tuple[str, str]]:
    config = document.get("config")
    devices = document.get("devices")
    if devices is None and isinstance(config, dict):
        devices = config.get("devices")
    ranks = {}
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, dict) and isinstance(device.get("rank"), int):
            ranks[device["rank"]] = (
                str(device.get("hostname", "")),
                str(device.get("device_info", "")).strip(),
            )
    return ranks


def _json_number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and _FLOAT_RE.match(value.strip()):
        return float(value)
    return None


def _json_half(half: object, prefix: str) -> dict | None:
    if not isinstance(half, dict):
        return None
    out = {}
    for key, column in (("alg_bw", "algbw_gbytes_per_s"), ("bus_bw", "busbw_gbytes_per_s")):
        out[prefix + column] = _json_number(half.get(key))
    out[prefix + "time_us"] = _json_number(half.get("time", half.get("cpu_time")))
    if any(v is None for v in out.values()):
        return None
    wrong = half.get("nwrong")
    out[prefix + "wrong"] = np.nan if wrong is None else _json_number(wrong)
    return None if out[prefix + "wrong"] is None else out


def _json_row(entry: object) -> dict | None:
    if not isinstance(entry, dict):
        return None
    size, count = entry.get("size"), entry.get("count")
    if not (isinstance(size, int) and isinstance(count, int)) or isinstance(size, bool):
        return None
    out_of_place = _json_half(entry.get("out_of_place"), "")
    in_place = _json_half(entry.get("in_place"), "inplace_")
    if out_of_place is None or in_place is None:
        return None
    root = str(entry.get("root", "")).strip()
    return {
        "size_bytes": size,
        "count": count,
        "dtype": str(entry.get("type", "")),
        "redop": str(entry.get("redop", "")).strip() or pd.NA,
        "root": int(root) if _INT_RE.match(root) else pd.NA,
        **out_of_place,
        **in_place,
    }


# --- entry point -------------------------------------------------------------------------------


def parse_nccl_tests(
    path: str | Path,
    *,
    collective: str | None = None,
    format: Literal["auto", "text", "json"] = "auto",
) -> NcclTestsLog:
    """Parse nccl-tests output (stdout or JSON report) into one row per message size.

    Parameters
    ----------
    path
        Captured stdout (any MPI prefix) or the JSON report.
    collective
        Test name (e.g. ``"all_reduce_perf"``) when the output does not say it; otherwise it
        comes from ``# Collective test starting:``/``concluded:``, a command line in the log,
        the JSON ``args``, or the file name.
    format
        ``"text"``, ``"json"`` or ``"auto"`` (default: JSON when the file starts with ``{``).

    Returns
    -------
    NcclTestsLog
        ``results`` (columns :data:`trainscale.schema.NCCL_COLUMNS` and any extra ones),
        ``skipped_lines``.

    Raises
    ------
    InputFileError
        Not text, no result row could be parsed, or invalid/truncated JSON (line named).
    """
    if format == "auto":
        format = "json" if read_text(path).lstrip("\ufeff \t\r\n").startswith("{") else "text"
    if format == "json":
        return _parse_json(path, collective)
    if format == "text":
        return _parse_text(path, collective)
    raise InputFileError(path, f"unknown nccl-tests format {format!r}")
