"""Training step logs: torchtitan, Megatron-LM (and forks) and Megatron CI golden values.

Reference: ../shared/reference/log-formats.md §1.1 (torchtitan ``MetricsProcessor.log``),
§1.2 (Megatron-LM ``training_log``; AMD Primus current/average pairs; golden-values JSON) and
§1.3 (Megatron-DeepSpeed; BigScience ``elapsed time per iteration (s)``).

Every step line is parsed in full or not at all: a line that looks like a step line (torchtitan
``step: N  loss:``, Megatron ``iteration N/ M |``) but fails the full pattern is skipped and
counted in :attr:`StepLog.skipped_lines`; no number is ever taken from a garbled line. In a
file whose step lines carry timestamps, a step line without one is garbled too.

The order of the lines is checked (:func:`~trainscale.ingest._step_columns.check_order`): a step
line repeated exactly (a log captured twice, ``tee`` into the same file) is dropped with a
warning in :attr:`StepLog.warnings`; the same step logged twice with different values, a step
number lower than the previous line's (shuffled lines, a restarted job appended to its log) or a
timestamp earlier than the previous step line's (a clock that went back) is an
:class:`~trainscale.errors.InputFileError` naming the file, the line and the step. Step numbers
that advance unevenly (``10, 20, 40``) are kept with a warning: a step line may be missing.

Units in the output are fixed: seconds, tokens/s per GPU, TFLOP/s per GPU, GiB, W, J; ``mfu`` is
a fraction in [0, 1].
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._step_columns import (
    StepColumns,
    check_order,
    frame_from_arrays,
    frame_from_rows,
    step_time_s,
)
from trainscale.ingest._text import (
    ANSI_RE,
    NUMBER,
    TIMESTAMP_RE,
    iter_lines,
    parse_json,
    read_head,
    read_text,
)

__all__ = ["StepFormat", "StepLog", "detect_step_format", "parse_step_log"]

StepFormat = Literal["torchtitan", "megatron", "megatron_golden"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepLog:
    """The step rows of one log file and what could not be read."""

    steps: pd.DataFrame
    """One row per logged step, columns :data:`trainscale.schema.STEP_COLUMNS`:

    - ``step`` (int64): optimizer step / iteration number as logged;
    - ``line`` (Int64): 1-based line number in the file, NA for JSON;
    - ``timestamp`` (datetime64[ns], naive, as written; NaT when the line has none);
    - ``loss``: training loss (Megatron ``lm loss``);
    - ``step_time_s``: seconds per step. Megatron: ``elapsed time per iteration`` (interval
      average); golden values: ``iteration-time``; torchtitan prints none, so it is the time
      between this line's timestamp and the previous parsed line's, divided by the steps between
      them (NaN for the first line or without timestamps);
    - ``tokens_per_s_per_gpu``: torchtitan ``tps``/``wps``, Primus ``tokens per GPU``,
      Megatron-DeepSpeed ``tgs``;
    - ``tflops_per_gpu``: torchtitan ``tflops``, Megatron ``throughput per GPU (TFLOP/s/GPU)``
      (model FLOPs);
    - ``mfu``: fraction 0..1 (torchtitan prints percent);
    - ``mem_gib``: torchtitan peak reserved GiB; golden values ``mem-max-allocated-bytes``/2**30;
    - ``power_w_per_gpu``, ``energy_j_per_gpu``: Megatron ``--log-energy`` (J per iteration);
    - ``global_batch`` (Int64): sequences per step (Megatron ``global batch size``).

    Fields a format does not have are NaN (NA for ``global_batch``)."""
    skipped_lines: int
    """Lines that looked like step lines but could not be parsed in full."""
    path: str
    """The file read."""
    format: StepFormat
    """``"torchtitan"``, ``"megatron"`` or ``"megatron_golden"``."""
    skipped_line_numbers: tuple[int, ...] = field(default=())
    """1-based numbers of the skipped lines."""
    warnings: tuple[str, ...] = field(default=())
    """Problems the data survived, each naming the file and line: exact duplicate step lines
    (dropped), step numbers that skip (a missing line?)."""


# --- torchtitan ------------------------------------------------------------------------------

_INT_WITH_COMMAS = r"\d{1,3}(?:,\d{3})+|\d+"
_DECIMAL_WITH_COMMAS = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_PLAIN = r"\d+(?:\.\d+)?"

_TITAN_HINT = re.compile(r"\bstep:\s*\d+\s+loss:")
_TITAN_RE = re.compile(
    rf"\bstep:\s*(?P<step>\d{{1,15}})"
    rf"\s+loss:\s*(?P<loss>{NUMBER})"
    rf"(?:\s+grad_norm:\s*(?P<grad_norm>{NUMBER}))?"
    rf"\s+memory:\s*(?P<mem>{_PLAIN})GiB\((?P<mem_pct>{_PLAIN})%\)"
    rf"\s+(?:tps|wps):\s*(?P<tps>{_INT_WITH_COMMAS})"
    rf"(?:\s+tflops:\s*(?P<tflops>{_DECIMAL_WITH_COMMAS}))?"
    rf"\s+mfu:\s*(?P<mfu>{_PLAIN})%"
    r"(?:\s+[A-Za-z_]+:\s*[\w.,%()]+)*\s*$",
    re.IGNORECASE,
)


def _titan_row(payload: str) -> dict | None:
    match = _TITAN_RE.search(payload)
    if match is None:
        return None
    tflops = match["tflops"]
    return {
        "step": int(match["step"]),
        "loss": float(match["loss"]),
        "tokens_per_s_per_gpu": float(match["tps"].replace(",", "")),
        "tflops_per_gpu": float(tflops.replace(",", "")) if tflops else math.nan,
        "mfu": float(match["mfu"]) / 100.0,
        "mem_gib": float(match["mem"]),
    }


# --- Megatron-LM iteration lines --------------------------------------------------------------

_MEGATRON_HINT = re.compile(r"\biteration\s+\d+\s*/\s*\d+\s*\|")
_ITERATION_RE = re.compile(r"^iteration\s+(\d{1,15})\s*/\s*(\d+)$")
_VALUE_RE = re.compile(rf"^(?P<current>{NUMBER})(?:\s*/\s*(?P<average>{NUMBER}))?$", re.I)


def _seconds(value: float) -> float:
    return value


def _milliseconds(value: float) -> float:
    return value / 1000.0


#: Megatron key → (column, conversion to the column's unit).
_MEGATRON_KEYS: dict[str, tuple[str, Callable[[float], float]]] = {
    "elapsed time per iteration (ms)": ("step_time_s", _milliseconds),
    "elapsed time per iteration (s)": ("step_time_s", _seconds),
    "throughput per gpu (tflop/s/gpu)": ("tflops_per_gpu", _seconds),
    "energy per gpu (j/iter/gpu)": ("energy_j_per_gpu", _seconds),
    "power per gpu (w/gpu)": ("power_w_per_gpu", _seconds),
    "tokens per gpu (tokens/s/gpu)": ("tokens_per_s_per_gpu", _seconds),
    "tokens per gpu per second (tgs)": ("tokens_per_s_per_gpu", _seconds),
    "lm loss": ("loss", _seconds),
    "global batch size": ("global_batch", _seconds),
}


def _megatron_row(payload: str) -> dict | None:
    """Parse ``iteration N/ M | key: value | …``; None if any part is not ``key: number``."""
    start = _MEGATRON_HINT.search(payload)
    if start is None:
        return None
    parts = [p.strip() for p in payload[start.start() :].split("|")]
    head = _ITERATION_RE.match(parts[0])
    if head is None or parts[-1]:
        return None  # every Megatron line ends with "|": text after it means truncation
    row: dict = {"step": int(head.group(1))}
    for part in parts[1:]:
        if not part:
            continue
        key, colon, text = part.partition(":")
        value = _VALUE_RE.match(text.strip())
        if not colon or value is None:
            return None
        number = float(value["current"])
        key = " ".join(key.split()).lower()
        if key in _MEGATRON_KEYS:
            column, convert = _MEGATRON_KEYS[key]
            row[column] = convert(number)
        elif "loss" not in row and key.endswith("loss") and key != "loss scale":
            row["loss"] = number
    if "step_time_s" not in row or not _is_whole(row.get("global_batch", 0.0)):
        return None
    return row


def _is_whole(value: float) -> bool:
    return math.isfinite(value) and abs(value) < 2**53 and value == int(value)


# --- text logs ---------------------------------------------------------------------------------

_PARSERS: dict[str, tuple[re.Pattern[str], Callable[[str], dict | None]]] = {
    "torchtitan": (_TITAN_HINT, _titan_row),
    "megatron": (_MEGATRON_HINT, _megatron_row),
}


def _segments(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, ANSI-stripped segment); ``\\r`` splits progress updates."""
    for number, line in enumerate(lines, start=1):
        for segment in line.split("\r"):
            if segment:
                yield number, ANSI_RE.sub("", segment)


def detect_step_format(path: str | Path) -> StepFormat:
    """Return the step-log format of a file (see :func:`parse_step_log`).

    Raises
    ------
    InputFileError
        Not text, or no line looks like a step line of a known format.
    """
    return _detect(path)


def _is_golden(path: str | Path) -> bool:
    stripped = read_head(path, 4096).lstrip("\ufeff \t\r\n")
    return str(path).endswith(".json") or re.match(r'\{\s*"', stripped) is not None


def _detect(path: str | Path) -> StepFormat:
    """The format with more step-like lines, in one streamed pass over the file."""
    if _is_golden(path):
        return "megatron_golden"
    counts = dict.fromkeys(_PARSERS, 0)
    for _, segment in _segments(iter_lines(path)):
        for name, (hint, _) in _PARSERS.items():
            if hint.search(segment):
                counts[name] += 1
    best = max(counts, key=counts.__getitem__)
    if counts[best] == 0:
        raise InputFileError(
            path,
            "no training step line found (expected torchtitan 'step: N  loss: …', "
            "Megatron 'iteration N/ M | …' or Megatron golden-values JSON)",
        )
    return best  # type: ignore[return-value]


def _parse_text(path: str | Path, fmt: str) -> StepLog:
    hint, parse_row = _PARSERS[fmt]
    columns = StepColumns()
    skipped: list[int] = []
    for number, segment in _segments(iter_lines(path)):
        found = hint.search(segment)
        if found is None:
            continue
        row = parse_row(segment)
        if row is None:
            skipped.append(number)
            continue
        stamp = TIMESTAMP_RE.search(segment, 0, found.start())
        columns.add(row, number, segment.strip(), stamp.groups() if stamp else None)
    rows = columns.arrays()
    stamped = ~np.isnat(rows["timestamp"])
    if stamped.any() and not stamped.all():  # a step line without a (valid) timestamp is damaged
        skipped = sorted(skipped + rows["line"][~stamped].tolist())
        rows = {name: values[stamped] for name, values in rows.items()}
    if not len(rows["step"]):
        where = (
            f"{len(skipped)} step line(s) but none could be parsed"
            if skipped
            else (f"no {fmt} step line found")
        )
        raise InputFileError(path, where, line=skipped[0] if skipped else None)
    keep, notes = check_order(rows, path)
    if not keep.all():
        rows = {name: values[keep] for name, values in rows.items()}
    if fmt == "torchtitan":
        rows["step_time_s"] = step_time_s(rows["timestamp"], rows["step"])
    steps = frame_from_arrays(rows)
    return StepLog(
        steps=steps,
        skipped_lines=len(skipped),
        path=str(path),
        format=fmt,
        skipped_line_numbers=tuple(skipped),
        warnings=tuple(notes),
    )


# --- Megatron golden values JSON ------------------------------------------------------------

#: golden-values metric → (column, conversion).
_GOLDEN_METRICS: dict[str, tuple[str, Callable[[float], float]]] = {
    "iteration-time": ("step_time_s", _seconds),
    "lm loss": ("loss", _seconds),
    "mem-max-allocated-bytes": ("mem_gib", lambda b: b / 2**30),
}


def _parse_golden(text: str, path: str | Path) -> StepLog:
    document = parse_json(text, path)
    if not isinstance(document, dict):
        raise InputFileError(path, "not Megatron golden values: top level is not an object")
    columns: dict[str, dict[int, float]] = {}
    for metric, (column, convert) in _GOLDEN_METRICS.items():
        if metric in document:
            values = _golden_values(document[metric], metric, path)
            columns[column] = {step: convert(v) for step, v in values.items()}
    if not columns:
        raise InputFileError(
            path,
            "no step values: expected an 'iteration-time' or 'lm loss' metric with "
            "'values' {step: number}",
        )
    steps = sorted(set().union(*(c.keys() for c in columns.values())))
    rows = [{"step": s, **{c: v.get(s, math.nan) for c, v in columns.items()}} for s in steps]
    frame = frame_from_rows(rows, pd.Series(pd.NaT, index=range(len(rows)), dtype="datetime64[ns]"))
    return StepLog(steps=frame, skipped_lines=0, path=str(path), format="megatron_golden")


def _golden_values(entry: object, metric: str, path: str | Path) -> dict[int, float]:
    values = entry.get("values") if isinstance(entry, dict) else None
    if not isinstance(values, dict):
        raise InputFileError(path, f"metric {metric!r} has no 'values' object")
    out = {}
    for key, value in values.items():
        step = key.strip() if isinstance(key, str) else ""
        if not step.isdigit():
            raise InputFileError(path, f"metric {metric!r}: step key {key!r} is not an integer")
        out[int(step)] = _golden_number(value, metric, key, path)
    return out


def _golden_number(value: object, metric: str, key: str, path: str | Path) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in {"nan", "inf", "-inf"}:
        return float(value)
    raise InputFileError(path, f"metric {metric!r}, step {key}: {value!r} is not a number")


# --- entry point -------------------------------------------------------------------------------


def parse_step_log(path: str | Path, format: StepFormat | Literal["auto"] = "auto") -> StepLog:
    """Parse a training log (or Megatron golden-values JSON) into one row per logged step.

    Parameters
    ----------
    path
        Console log (any launcher prefix, ANSI colours allowed) or golden-values ``.json``.
    format
        ``"torchtitan"``, ``"megatron"`` (also Megatron-DeepSpeed, BigScience, AMD Primus,
        Megatron-Bridge), ``"megatron_golden"``, or ``"auto"`` (default): JSON when the file
        ends in ``.json`` or starts with ``{"``; otherwise the format with more step-like lines.

    Returns
    -------
    StepLog
        ``steps`` (columns :data:`trainscale.schema.STEP_COLUMNS`, units in their names),
        ``skipped_lines`` (garbled step lines), ``path``, ``format``.

    Raises
    ------
    InputFileError
        Not a text file; no step line at all (or none parseable); invalid or truncated JSON
        (the message names the line); a golden-values entry that is not a number.
    """
    fmt = _detect(path) if format == "auto" else format
    if fmt == "megatron_golden":
        return _parse_golden(read_text(path), path)
    if fmt not in _PARSERS:
        raise InputFileError(path, f"unknown step-log format {fmt!r}")
    return _parse_text(path, fmt)
