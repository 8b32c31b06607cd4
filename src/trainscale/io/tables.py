"""A user's table in and out: CSV or Parquet chosen by the file's extension.

:func:`read_table` refuses what pandas would silently change or misread (a header naming a
column twice, which pandas renames ``name.1``; a data row with more fields than the header, which
shifts every field; Parquet columns of nested type) and names the usual causes of a CSV that is
not one (a ``#`` comment line, ``;`` or tab separators, spaces around the header's names);
:func:`write_table` writes the schema's columns in the schema's dtypes, atomically. Errors name
the file, the CSV line and the 0-based data row.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from trainscale.errors import InputFileError, TrainscaleError
from trainscale.io.atomic import atomic_paths
from trainscale.io.outputs import check_outputs
from trainscale.io.parquet import typed_column
from trainscale.schema import DATASET_COLUMNS

__all__ = ["check_output", "read_table", "write_table"]


def _check_csv(path: Path) -> list[str]:
    """The CSV's header, after its structure is checked (one pass of the csv module)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            records = csv.reader(handle)
            header = next(records, [])
            _check_header(path, header)
            row = 0
            for fields in records:
                if not fields or fields == [""]:
                    continue  # a blank line: pandas skips it too
                _check_record(path, records.line_num, row, fields, len(header))
                row += 1
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputFileError(path, f"cannot read table: {error}") from None
    return header


def _check_header(path: Path, header: list[str]) -> None:
    if header and header[0].lstrip().startswith("#"):
        raise InputFileError(
            path, "a comment line ('#'); the first line must be the header (comma-separated "
            "column names): remove comment lines", line=1,
        )  # fmt: skip
    if len(header) == 1:
        for separator, name in ((";", "';'"), ("\t", "tabs"), ("|", "'|'")):
            if separator in header[0]:
                raise InputFileError(
                    path, f"the header is separated by {name}; a CSV table's columns are "
                    "separated by commas (save it as comma-separated CSV)", line=1,
                )  # fmt: skip
    spaced = [name for name in header if name != name.strip()]
    if spaced:
        raise InputFileError(
            path,
            f"column name(s) {', '.join(map(repr, spaced))} have spaces around them; write the "
            "header without spaces after the commas (e.g. model,gpu,num_gpus)",
            line=1,
        )


def _check_record(path: Path, line: int, row: int, fields: list[str], width: int) -> None:
    if fields[0].lstrip().startswith("#"):
        raise InputFileError(
            path, f"row {row}: a comment line ('#'); comment lines are not allowed: remove it",
            line=line,
        )  # fmt: skip
    if len(fields) > width:
        raise InputFileError(
            path,
            f"row {row} has {len(fields)} fields, the header {width}: a value holding an "
            "unquoted comma (a decimal comma, a thousands separator) shifts every field after "
            "it; write the number plainly (1024, 0.5) or quote the text",
            line=line,
        )
    if len(fields) < width:
        raise InputFileError(
            path,
            f"row {row} has {len(fields)} fields, the header {width}; every row needs one "
            "field per column (leave a field empty, ',,', for the default)",
            line=line,
        )


def _parquet_columns(path: Path) -> list[tuple[str, object]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as error:
        raise InputFileError(path, f"cannot read table: {error}") from None
    return [(field.name, field.type) for field in schema]


def _refuse_duplicates(path: Path, names: list[str]) -> None:
    seen: set[str] = set()
    repeated = [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]
    if repeated:
        raise InputFileError(
            path,
            f"line 1: column(s) {', '.join(map(repr, dict.fromkeys(repeated)))} appear more "
            "than once in the header; each column may appear once",
        )


def read_table(path: Path) -> pd.DataFrame:
    """Read a CSV or Parquet table; errors name the file.

    Refused: a header naming a column twice (pandas would silently rename the second to
    ``name.1``), and Parquet columns of nested type (lists, structs, maps).
    """
    if not path.is_file():
        raise InputFileError(path, "no such file")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputFileError(path, "unknown extension; use .csv or .parquet")
    if suffix == ".csv":
        _refuse_duplicates(path, _check_csv(path))
    else:
        import pyarrow as pa

        fields = _parquet_columns(path)
        _refuse_duplicates(path, [name for name, _ in fields])
        nested = [name for name, kind in fields if pa.types.is_nested(kind)]
        if nested:
            raise InputFileError(
                path,
                f"column(s) {', '.join(map(repr, nested))} hold lists or structs; every column "
                "must hold one number or text per row",
            )
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        # only an empty cell is empty: pandas would also read nan, NA, null and None as empty,
        # which docs/bad-input.md says are refused (a number column: not a finite number)
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except Exception as error:  # pandas raises many types for malformed files
        raise InputFileError(path, f"cannot read table: {error}") from error


def _schema_typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Schema columns in the schema's dtypes (nullable); other columns as they are."""
    out = frame.copy()
    for col in DATASET_COLUMNS:
        if col.name in out.columns:
            out[col.name] = typed_column(out[col.name], col)
    return out


def write_table(frame: pd.DataFrame, path: Path, *, schema_types: bool = True) -> None:
    """Write CSV or Parquet by extension, atomically (a temporary file with a random name in the
    same folder, then a rename): two runs writing one file never mix, a failure leaves nothing.

    ``schema_types``: schema columns are written in the schema's dtypes; False writes the values
    as they are (a rejects table, whose rows hold what the input had: ``32.5`` or ``inf`` in an
    integer column, text in a number column).

    Raises
    ------
    TrainscaleError
        Unknown extension, the file or folder cannot be written, or a column cannot be stored.
    """
    import pyarrow as pa

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise TrainscaleError(f"{path}: unknown extension; use .csv or .parquet")
    if schema_types:
        frame = _schema_typed(frame)
    try:
        with atomic_paths([path]) as (temp,):
            if suffix == ".csv":
                frame.to_csv(temp, index=False)
            else:
                frame.to_parquet(temp, index=False)
    except OSError as error:
        raise TrainscaleError(
            f"{path}: cannot write: {error.strerror or error}"
            + (f" ({error.filename})" if error.filename else "")
        ) from None
    except (pa.ArrowException, ValueError, TypeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise TrainscaleError(f"{path}: cannot write as {suffix[1:]}: {first}") from None


def check_output(
    output: Path,
    configs: Path | None = None,
    rejects: Path | None = None,
    *,
    inputs: Iterable[Path | None] = (),
) -> None:
    """Refuse, before anything is read or computed, an output whose format is unknown and an
    output (or its ``rejects`` file) that would overwrite the input table ``configs`` or any of
    ``inputs`` (:func:`trainscale.io.outputs.check_outputs`).

    Raises
    ------
    TrainscaleError
        Naming the output path and what is wrong."""
    if output.suffix.lower() not in (".csv", ".parquet"):
        raise TrainscaleError(f"{output}: unknown extension for -o; use .csv or .parquet")
    check_outputs(
        {"-o": output, "the rejects file of -o": rejects},
        [configs, *inputs],
    )
