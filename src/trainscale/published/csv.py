"""Strict reading of the published measurements CSV: structure, columns, values, bounds and
duplicates are checked before any row is normalised or fitted.

A malformed file raises :class:`~trainscale.errors.InputFileError` naming the file, the CSV line,
the 0-based data row (row 0 is the first data row, line 2 of the CSV), the column, the value and
what is allowed, e.g. ``measurements.csv:40: row 38, column 'num_gpus': '0' is not valid;
allowed: ...``. What is refused:

- an empty file, a header without data rows, duplicate or missing required columns, broken
  quoting, a record over several lines, a row with more or fewer fields than the header, text
  that is not ASCII;
- an unknown metric, an empty source/url/metric, a url that is not http(s);
- a ``value`` that is not a plain number, a lower bound (``>173``), an approximate value
  (``~350``) or a range (``47-48``) (text only in ``power_note`` rows); zero, negative,
  ``inf``/``nan`` or anything else that is not a positive finite number;
- an integer column outside its plausible range (:data:`INTEGER_BOUNDS`), a GPU count above
  :data:`~trainscale.schema.MAX_GPUS`;
- a value above what the row's GPU can physically produce (peak FLOP/s, NVLink bandwidth, TDP);
- **duplicate rows**: two rows equal in the configuration (every field but ``value`` and the
  free text, :data:`FREE_TEXT_COLUMNS`) and in value (as a number: ``137`` is ``137.0``),
  whatever their ``notes`` say (the second would double the row's weight in the fit); and two
  rows equal in every field except ``value`` (the same configuration of the same source and
  table published with two different numbers: which one is right cannot be decided here).
  Fields are compared with spaces collapsed and case folded. Rows of one configuration with
  different values and different ``notes`` (torchtitan's runs with and without
  ``torch.compile`` differ only there) are different measurements.
- a UTF-8 byte-order mark at the start is dropped, as every other input does.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trainscale.errors import InputFileError
from trainscale.published.matching import gpu_key
from trainscale.schema import NUMERIC_BOUNDS

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "BUSBW_NVLINK_LIMIT",
    "INTEGER_BOUNDS",
    "KNOWN_METRICS",
    "ParsedValue",
    "Record",
    "check_record",
    "parse_value",
    "read_records",
]

#: Every metric of README section 3 (anything else is a typo or an undocumented addition).
KNOWN_METRICS: tuple[str, ...] = (
    "tokens_per_s_per_GPU", "achieved_TFLOPs_per_GPU", "TFLOPs_per_GPU", "MFU_pct",
    "weak_scaling_efficiency_pct", "scaling_efficiency_pct", "aggregate_PFLOPs", "step_time_ms",
    "busbw_GBps", "power_w_per_gpu_avg", "power_w_per_gpu_checkpointing",
    "node_power_kW_max_observed", "node_power_fraction_of_TDP_pct", "power_note",
)  # fmt: skip
REQUIRED_COLUMNS = ("source", "url", "model", "gpu", "num_gpus", "metric", "value", "notes")

#: Plausible range (inclusive) of each integer column: the ranges of the predict tables' bounds
#: table (:data:`trainscale.schema.NUMERIC_BOUNDS`, the one definition), under this CSV's column
#: names (``global_batch_seqs`` is ``global_batch``; ``dp`` is bounded as ``num_gpus``).
INTEGER_BOUNDS: dict[str, tuple[int, int]] = {
    name: (int(NUMERIC_BOUNDS[key].low), int(NUMERIC_BOUNDS[key].high))
    for name, key in (
        ("layers", "layers"), ("hidden", "hidden"), ("heads", "heads"), ("ffn", "ffn"),
        ("vocab", "vocab"), ("seq_len", "seq_len"), ("global_batch_seqs", "global_batch"),
        ("micro_batch", "micro_batch"), ("num_gpus", "num_gpus"),
        ("gpus_per_node", "gpus_per_node"), ("tp", "tp"), ("pp", "pp"), ("dp", "num_gpus"),
        ("cp", "cp"),
    )
}  # fmt: skip
_NUMBER = r"\d+(?:\.\d+)?"
_VALUE_FORMS = (
    "a plain number (137 or 1.5), a lower bound ('>173'), an approximate value ('~350') or a "
    "range ('47-48')"
)
#: busbw above this multiple of the GPU's NVLink bandwidth per direction is impossible
#: (NVLink SHARP reaches about 1.07x on H100 and 0.94x on B200; 3x leaves room for any algorithm).
BUSBW_NVLINK_LIMIT = 3.0


@dataclass(frozen=True, slots=True)
class Record:
    """One data row of the CSV as text: ``row`` (0-based data row), ``line`` (1-based CSV line,
    the header is line 1) and ``fields`` (column -> text as written)."""

    row: int
    line: int
    fields: dict[str, str]


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """The ``value`` field, parsed: ``kind`` is number, lower_bound, approximate, range or text."""

    kind: str
    number: float
    """The number (lower bound, approximate value, or the low end of a range); NaN for text."""
    high: float
    """The high end of a range; equal to ``number`` otherwise."""


def _bad(path: Path, record: Record, column: str, value: str, allowed: str) -> InputFileError:
    return InputFileError(
        path,
        f"row {record.row}, column '{column}': {value!r} is not valid; allowed: {allowed}",
        line=record.line,
    )


def parse_value(text: str, metric: str, *, path: Path, record: Record) -> ParsedValue:
    """Parse the ``value`` field per the data README, section 1; raise for anything else (zero
    and negative numbers included: every published figure here is a positive rate, time,
    bandwidth or power)."""
    s = text.strip()
    allowed = _VALUE_FORMS + (" or text" if metric == "power_note" else
                              " (text only in power_note rows)")  # fmt: skip
    if metric == "power_note":
        if not s:
            raise _bad(path, record, "value", text, allowed)
        return ParsedValue("text", np.nan, np.nan)
    if re.fullmatch(rf"-\s*{_NUMBER}", s):
        raise _bad(path, record, "value", text, "a value that is not negative: " + allowed)
    parsed = None
    if re.fullmatch(_NUMBER, s):
        parsed = ParsedValue("number", float(s), float(s))
    elif m := re.fullmatch(rf">\s*({_NUMBER})", s):
        parsed = ParsedValue("lower_bound", float(m.group(1)), float(m.group(1)))
    elif m := re.fullmatch(rf"~\s*({_NUMBER})", s):
        parsed = ParsedValue("approximate", float(m.group(1)), float(m.group(1)))
    elif m := re.fullmatch(rf"({_NUMBER})\s*-\s*({_NUMBER})", s):
        low, high = float(m.group(1)), float(m.group(2))
        if low > high:
            raise _bad(path, record, "value", text, "a range written low-high: " + allowed)
        parsed = ParsedValue("range", low, high)
    if parsed is None:
        raise _bad(path, record, "value", text, allowed)
    if not parsed.number > 0 or not np.isfinite(parsed.high):
        raise _bad(path, record, "value", text, "a positive finite number: " + allowed)
    return parsed


def _check_numeric_columns(path: Path, record: Record) -> None:
    fields = record.fields
    for column, (low, high) in INTEGER_BOUNDS.items():
        text = fields.get(column, "").strip()
        if not text or column == "num_gpus":
            continue
        allowed = f"empty or a positive whole number up to {high:,} (e.g. 24 or 24.0)"
        whole = re.fullmatch(_NUMBER, text) and float(text) == int(float(text))
        if not whole or not low <= int(float(text)) <= high:
            raise _bad(path, record, column, fields[column], allowed)
    params = fields.get("params_b", "").strip()
    if params and not (re.fullmatch(_NUMBER, params) and 0 < float(params) < 1e6):
        raise _bad(path, record, "params_b", fields["params_b"],
                   "empty or a positive number of billions below 10^6 (e.g. 6.7)")  # fmt: skip
    gpus = fields.get("num_gpus", "").strip()
    low, high = INTEGER_BOUNDS["num_gpus"]
    allowed = (f"empty, a positive whole number up to {high:,}, or 'N and M' for a source that "
               "gives several GPU counts")  # fmt: skip
    if gpus and not re.fullmatch(r"\d+|\d+ and \d+", gpus):
        raise _bad(path, record, "num_gpus", fields["num_gpus"], allowed)
    if gpus and not all(low <= int(n) <= high for n in re.findall(r"\d+", gpus)):
        raise _bad(path, record, "num_gpus", fields["num_gpus"], allowed)


def _check_physical(
    path: Path, record: Record, value: ParsedValue, hardware: HardwareCatalog
) -> None:
    """Refuse values no hardware in the catalogue can produce (against the row's GPU)."""
    if value.kind == "text":
        return
    fields = record.fields
    metric, number = fields["metric"], value.high
    key = gpu_key(fields.get("gpu", ""), hardware)
    gpus = [hardware.gpus[key]] if key in hardware.gpus else list(hardware.gpus.values())
    fp8 = "fp8" in fields.get("precision", "").lower()
    peak = max((g.fp8_flops_per_s if fp8 and g.fp8_flops_per_s else g.bf16_flops_per_s)
               for g in gpus) / 1e12  # fmt: skip
    where = f"the dense {'FP8' if fp8 else 'BF16'} peak of {key or 'any catalogued GPU'}"
    tdp = (max(g.tdp_w for g in gpus), f"at most the TDP of {key or 'a GPU'}")
    limits: dict[str, tuple[float, str]] = {
        "achieved_TFLOPs_per_GPU": (peak, f"at most {peak:g} TFLOP/s ({where})"),
        "TFLOPs_per_GPU": (peak, f"at most {peak:g} TFLOP/s ({where})"),
        "MFU_pct": (100.0, "at most 100 %"),
        "busbw_GBps": (
            BUSBW_NVLINK_LIMIT * max(g.nvlink_bytes_per_s for g in gpus) / 1e9,
            f"at most {BUSBW_NVLINK_LIMIT:g} x the NVLink bandwidth per direction of "
            f"{key or 'any catalogued GPU'}",
        ),
        "power_w_per_gpu_avg": tdp,
        "power_w_per_gpu_checkpointing": tdp,
    }
    if metric == "aggregate_PFLOPs":
        count = fields.get("num_gpus", "").strip()
        if count.isdigit():
            per_gpu = number * 1e3 / int(count)
            if per_gpu > peak:
                raise _bad(path, record, "value", fields["value"],
                           f"an aggregate of at most {peak:g} TFLOP/s x {count} GPUs "
                           f"({where}); this is {per_gpu:g} TFLOP/s per GPU")  # fmt: skip
        return
    if metric in limits and number > limits[metric][0]:
        raise _bad(path, record, "value", fields["value"],
                   f"{limits[metric][1]}, physically possible for {metric}")  # fmt: skip


def check_record(path: Path, record: Record, hardware: HardwareCatalog) -> ParsedValue:
    """Validate one record against the rules of this module; return its parsed value."""
    fields = record.fields
    for column in ("source", "url", "metric"):
        if not fields.get(column, "").strip():
            raise _bad(path, record, column, fields.get(column, ""),
                       "a non-empty text: every row needs a source, url and metric")  # fmt: skip
    if not re.match(r"https?://", fields["url"].strip()):
        raise _bad(path, record, "url", fields["url"], "an http:// or https:// address")
    metric = fields["metric"].strip()
    if metric not in KNOWN_METRICS:
        raise _bad(path, record, "metric", fields["metric"], ", ".join(KNOWN_METRICS))
    _check_numeric_columns(path, record)
    value = parse_value(fields.get("value", ""), metric, path=path, record=record)
    _check_physical(path, record, value, hardware)
    return value


#: Free-text columns: what a row says about a measurement, not which measurement it is. Two
#: rows equal in everything else and in value are one measurement written twice.
FREE_TEXT_COLUMNS = ("notes", "table_or_figure")


def _field(text: str) -> str:
    """A field as compared: surrounding spaces stripped, inner runs of spaces one, case folded."""
    return " ".join(text.split()).casefold()


def _number_or_text(text: str) -> object:
    """A value as compared: its number where it is a plain number (``137`` = ``137.0``)."""
    try:
        number = float(text)
    except ValueError:
        return _field(text)
    return number if number == number else _field(text)


def check_duplicates(path: Path, records: list[Record]) -> None:
    """Refuse a row that repeats an earlier one: equal in the configuration (every field but
    ``value`` and the free text of :data:`FREE_TEXT_COLUMNS`) and in ``value`` (compared as a
    number), whatever the free text says; or equal in every field but ``value`` (a conflict).
    Fields are compared with spaces collapsed and case folded (:func:`_field`)."""
    same_configuration: dict[tuple, Record] = {}
    everything_but_value: dict[tuple, Record] = {}
    for record in records:
        fields = {k: _field(v) for k, v in record.fields.items() if k != "value"}
        configuration = tuple(sorted(
            (k, v) for k, v in fields.items() if k not in FREE_TEXT_COLUMNS
        ))  # fmt: skip
        value = _number_or_text(record.fields["value"])
        first = same_configuration.setdefault((configuration, value), record)
        if first is not record:
            differ = [
                c for c in FREE_TEXT_COLUMNS if fields.get(c) != _field(first.fields.get(c, ""))
            ]
            also = f", differing only in {', '.join(differ)}" if differ else " field for field"
            raise InputFileError(
                path,
                f"row {record.row} repeats row {first.row} (line {first.line}){also}: the same "
                "configuration and value; a measurement is written once (a repeated row would "
                "count twice in the fit)",
                line=record.line,
            )
        first = everything_but_value.setdefault(tuple(sorted(fields.items())), record)
        if first is not record:
            raise InputFileError(
                path,
                f"row {record.row}, column 'value': {record.fields['value']!r} conflicts with "
                f"{first.fields['value']!r} of row {first.row} (line {first.line}), which is the "
                "same row in every other field; allowed: one value per configuration of a "
                "source's table (tell two runs apart in another column, e.g. notes)",
                line=record.line,
            )


def _header(path: Path, reader: csv.reader) -> list[str]:  # type: ignore[valid-type]
    header = next(reader, None)
    if header is None:
        raise InputFileError(path, "empty file; expected a header row", line=1)
    if len(set(header)) != len(header):
        raise InputFileError(path, f"duplicate column names in the header {header}", line=1)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise InputFileError(path, f"missing column(s) {', '.join(missing)}", line=1)
    return header


def read_records(path: Path) -> list[Record]:
    """Every data row, read with the csv module and checked for structure and duplicates
    (:func:`check_duplicates`; the values are checked by :func:`check_record`)."""
    try:
        raw = path.read_bytes()
        handle = io.StringIO(raw.removeprefix(codecs.BOM_UTF8).decode("ascii"), newline="")
    except UnicodeDecodeError as error:
        raise InputFileError(path, f"not ASCII text: {error}") from error
    except OSError as error:
        raise InputFileError(path, f"cannot read: {error}") from error
    out: list[Record] = []
    with handle:
        reader = csv.reader(handle, strict=True)
        last = 0
        try:
            header = _header(path, reader)
            last = reader.line_num
            for fields in reader:
                line = last + 1
                if reader.line_num != line:
                    raise InputFileError(
                        path, f"a record runs over lines {line}-{reader.line_num}: a quote is "
                        "not closed (every row of the file is one line)", line=line,
                    )  # fmt: skip
                last = reader.line_num
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise InputFileError(
                        path, f"row {len(out)}: {len(fields)} fields where the header has "
                        f"{len(header)}: broken quoting (a field with a comma must be "
                        "double-quoted) or a missing or extra comma", line=line,
                    )  # fmt: skip
                out.append(Record(len(out), line, dict(zip(header, fields, strict=True))))
        except csv.Error as error:
            raise InputFileError(
                path,
                f"broken CSV quoting in the record that starts on this line (detected on line "
                f"{reader.line_num}): {error}",
                line=last + 1,
            ) from error  # fmt: skip
        except UnicodeDecodeError as error:
            raise InputFileError(path, f"not ASCII text: {error}") from error
    if not out:
        raise InputFileError(path, "no data rows: a header without any measurement", line=2)
    check_duplicates(path, out)
    return out
