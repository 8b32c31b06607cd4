"""Tests of trainscale.ingest._text: text detection, lines and timestamps.

Reference: ../shared/reference/log-formats.md §0 (checklist: ANSI codes, prefixes, ``\\r``).
"""

from __future__ import annotations

import gzip

import pandas as pd
import pytest

from trainscale.errors import InputFileError
from trainscale.ingest._text import (
    ANSI_RE,
    TIMESTAMP_RE,
    iter_lines,
    parse_timestamps,
    read_lines,
    read_text,
)


def test_gzip_is_not_text(tmp_path):
    path = tmp_path / "log.gz"
    path.write_bytes(gzip.compress(b"step: 1 loss: 2.0\n" * 100))
    with pytest.raises(InputFileError, match="not a text file"):
        read_text(path)


def test_a_few_bad_bytes_stay_text(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"hello \xff world\r\nsecond\n" * 50)
    lines = read_lines(path)
    assert lines[0] == "hello \ufffd world"
    assert lines[1] == "second"


def test_timestamps_from_prefixes():
    parts = [
        TIMESTAMP_RE.search(text).groups()
        for text in (
            "[rank0]:[titan] 2025-01-02 03:04:05,678 - root",
            "[2025-09-11 14:09:47,568581][I]",
            "2025/01/01 12:00:00.100",
            "0025-01-01 00:00:00",  # damaged year: out of datetime64[ns] range
            "2025-13-01 00:00:00",  # impossible month
        )
    ] + [None]
    stamps = parse_timestamps(parts)
    assert stamps.dtype == "datetime64[ns]"
    assert stamps.iloc[0] == pd.Timestamp("2025-01-02 03:04:05.678")
    assert stamps.iloc[1] == pd.Timestamp("2025-09-11 14:09:47.568581")
    assert stamps.iloc[2] == pd.Timestamp("2025-01-01 12:00:00.100")
    assert stamps.iloc[3:].isna().all()


def test_ansi_codes():
    assert ANSI_RE.sub("", "\x1b[31mstep: 1\x1b[39m") == "step: 1"


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbfone\r\ntwo\rthree\n\nfour",  # byte-order mark, \r\n, a lone \r, no final \n
        b"a\n" + "\u00e9".encode() * 40_000 + b"\xff\n",  # multi-byte and bad bytes across chunks
        b"",
        b"last line ends the file\n",
    ],
)
def test_streamed_lines_are_the_split_text(tmp_path, data):
    """:func:`iter_lines` gives what ``read_text().split("\\n")`` gives, less a trailing empty
    line, with ``strip_cr`` what :func:`read_lines` gives."""
    path = tmp_path / "log.txt"
    path.write_bytes(data)
    split = read_text(path).split("\n")
    expected = split[:-1] if split and split[-1] == "" else split
    assert list(iter_lines(path)) == expected
    assert list(iter_lines(path, strip_cr=True)) == [x.removesuffix("\r") for x in expected]


def test_streamed_lines_refuse_binary_before_the_first_line(tmp_path):
    path = tmp_path / "log.gz"
    path.write_bytes(gzip.compress(b"step: 1 loss: 2.0\n" * 100))
    with pytest.raises(InputFileError, match="not a text file"):
        next(iter_lines(path))
