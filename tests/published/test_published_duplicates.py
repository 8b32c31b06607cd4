"""A published row repeated with other free text (notes, table), other spacing or case, or its
value written another way (137.0 for 137) is a duplicate: the rule compares the configuration
and the value. A BOM at the start is accepted as everywhere else."""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.errors import InputFileError
from trainscale.published.csv import FREE_TEXT_COLUMNS, read_records

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "published" / "measurements.csv"
HEADER, *ROWS = list(csv.reader(io.StringIO(SHIPPED.read_text())))


def _write(path: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([HEADER, *rows])
    path.write_text(out.getvalue())
    return path


def _respace(text: str, how: int) -> str:
    return [text, f" {text} ", text.upper(), text.replace(" ", "  ")][how % 4]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    row=st.integers(0, len(ROWS) - 1),
    notes=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    free=st.sampled_from(FREE_TEXT_COLUMNS),
    how=st.integers(0, 3),
    as_float=st.booleans(),
)
def test_a_repeated_measurement_is_refused_whatever_its_free_text(
    tmp_path_factory: pytest.TempPathFactory, row: int, notes: str, free: str, how: int,
    as_float: bool,
) -> None:  # fmt: skip
    original = ROWS[row]
    copy = list(original)
    copy[HEADER.index(free)] = notes
    copy[HEADER.index("model")] = _respace(copy[HEADER.index("model")], how)
    value = copy[HEADER.index("value")]
    if as_float and value.isdigit():
        copy[HEADER.index("value")] = f"{value}.0"
    path = _write(
        tmp_path_factory.mktemp("p") / "m.csv", [*ROWS[: row + 1], copy, *ROWS[row + 1 :]]
    )
    with pytest.raises(
        InputFileError, match=rf"row {row + 1} repeats row {row} .*same configuration and value"
    ):
        read_records(path)


def test_the_shipped_file_has_no_duplicate() -> None:
    assert len(read_records(SHIPPED)) == len(ROWS)


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(codecs.BOM_UTF8 + SHIPPED.read_bytes())
    assert [r.fields for r in read_records(path)] == [r.fields for r in read_records(SHIPPED)]
