"""Reading log files as text, shared by the text parsers.

Reference: ../shared/reference/log-formats.md §0 (parser checklist: ANSI codes, launcher
prefixes, carriage-return progress bars, thousands separators).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from trainscale.errors import InputFileError

__all__ = [
    "ANSI_RE",
    "NUMBER",
    "TIMESTAMP_RE",
    "iso_to_datetime_ns",
    "iter_lines",
    "parse_timestamps",
    "read_head",
    "read_lines",
    "read_text",
]

#: ANSI colour codes (torchtitan, AMD Primus).
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")

#: A plain decimal or exponent number, or nan/inf (match case-insensitively).
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"

#: ``YYYY-MM-DD HH:MM:SS[.,]frac`` or ``YYYY/MM/DD …`` anywhere in a prefix.
TIMESTAMP_RE = re.compile(
    r"(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
)

# A file is "not text" when this share of its first bytes are NULs or invalid UTF-8.
_SAMPLE_BYTES = 65536
_BINARY_SHARE = 0.05


def _check_text(path: str | Path, sample: bytes) -> None:
    """Refuse a file whose first bytes are mostly NULs or invalid UTF-8 (see :func:`read_text`)."""
    bad = sample.count(b"\x00") + sample.decode("utf-8", errors="replace").count("\ufffd")
    if sample and bad > _BINARY_SHARE * len(sample):
        raise InputFileError(path, "not a text file (binary or compressed data)")


def iter_lines(path: str | Path, *, strip_cr: bool = False) -> Iterator[str]:
    """The file's lines one at a time, as ``read_text(path).split("\n")`` gives them but
    without holding the file in memory (a 10^6-line log is read in constant memory); a trailing
    empty line after the last ``\n`` is not yielded. Decoding and checks as :func:`read_text`;
    ``strip_cr`` removes a trailing ``\r`` as :func:`read_lines` does.

    Raises
    ------
    InputFileError
        As :func:`read_text`; the check runs before the first line is yielded.
    """
    try:
        handle = Path(path).open("rb")  # noqa: SIM115 (closed by the with below; the open is checked apart)
    except OSError as error:
        raise InputFileError(path, f"cannot read the file: {error.strerror or error}") from None
    with handle:
        _check_text(path, handle.read(_SAMPLE_BYTES))
        handle.seek(0)
        # newline="\n": lines end at "\n" only; a "\r" stays in the line (progress bars).
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="replace", newline="\n")
        try:
            for line in text:
                line = line.removesuffix("\n")
                yield line.removesuffix("\r") if strip_cr else line
        except OSError as error:
            raise InputFileError(path, f"cannot read the file: {error.strerror or error}") from None


def read_head(path: str | Path, size: int = _SAMPLE_BYTES) -> str:
    """The first ``size`` bytes of the file as text (decoded as :func:`read_text`)."""
    try:
        with Path(path).open("rb") as handle:
            sample = handle.read(size)
    except OSError as error:
        raise InputFileError(path, f"cannot read the file: {error.strerror or error}") from None
    _check_text(path, sample)
    return sample.decode("utf-8-sig", errors="replace")


def read_text(path: str | Path) -> str:
    """Return the file's text, decoding invalid UTF-8 bytes as U+FFFD; a leading UTF-8 byte-order
    mark (Excel, PowerShell ``Out-File``) is dropped.

    Raises
    ------
    InputFileError
        The file cannot be read, or more than 5 % of its first 64 KiB are NUL bytes or invalid
        UTF-8 (a binary or compressed file).
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputFileError(path, f"cannot read the file: {error.strerror or error}") from None
    _check_text(path, raw[:_SAMPLE_BYTES])
    return raw.decode("utf-8-sig", errors="replace")  # a UTF-8 byte-order mark is dropped


def read_lines(path: str | Path) -> list[str]:
    """Return the file's lines (split on ``\\n``; a trailing ``\\r`` is removed)."""
    return [line.removesuffix("\r") for line in read_text(path).split("\n")]


def parse_timestamps(parts: list[tuple[str, ...] | None]) -> pd.Series:
    """Build a naive ``datetime64[ns]`` Series from :data:`TIMESTAMP_RE` groups (NaT if None).

    Impossible dates (month 13, second 61) become NaT rather than an error.
    """
    texts = [
        f"{p[0]}-{p[1]}-{p[2]}T{p[3]}:{p[4]}:{p[5]}" + (f".{p[6]}" if p[6] else "")
        if p is not None
        else None
        for p in parts
    ]
    return iso_to_datetime_ns(texts)


def iso_to_datetime_ns(texts: object) -> pd.Series:
    """Naive ``datetime64[ns]`` from ISO-8601 strings; unparseable or out-of-range → NaT.

    Years outside what nanoseconds can hold (1677-2262), e.g. from a damaged line, become NaT
    instead of an overflow error.
    """
    values = pd.to_datetime(pd.Series(texts, dtype=object), format="ISO8601", errors="coerce")
    in_range = (values >= pd.Timestamp.min) & (values <= pd.Timestamp.max)
    return values.where(in_range).astype("datetime64[ns]")


def parse_json(text: str, path: str | Path) -> Any:
    """Parse JSON text; a truncated or invalid document raises :class:`InputFileError` naming the
    file and the line where parsing stopped."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputFileError(
            path,
            f"invalid or truncated JSON: {error.msg} (column {error.colno})",
            line=error.lineno,
        ) from None
    except RecursionError:
        raise InputFileError(path, "JSON nested too deeply") from None
