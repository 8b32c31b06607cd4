"""Parquet tables written with an explicit schema, so the same rows give the same bytes.

Every table is written with an explicit pyarrow schema built from :mod:`trainscale.schema`
(dtypes, and each field's unit and description in its metadata), zstd compression, columns in
schema order and no pandas metadata.

- :func:`conform` gives any result-like frame exactly the columns of a schema, typed;
- :func:`config_ids` is the content id of each configuration (every result table carries it);
- :func:`write_parquet` / :func:`read_parquet` write and read one table (written to a temporary
  file and renamed, so a failed job leaves no partial file; read back with the types
  :func:`pandas.read_parquet` gives, so missing values are NaN or None, never ``pd.NA``);
  :func:`read_frame`, :func:`read_table` and :func:`open_parquet` read any Parquet file the
  workflow wrote, and a corrupt or truncated one is an error naming it and saying to delete it;
  :class:`ParquetStream` writes one table batch by batch (one row group per batch), so a table
  of millions of rows is never held in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trainscale.errors import InputFileError
from trainscale.io.atomic import atomic_path
from trainscale.schema import (
    DATASET_COLUMNS,
    Column,
    arrow_schema,
)

__all__ = [
    "COMPRESSION",
    "ParquetStream",
    "as_pandas_reads",
    "config_ids",
    "conform",
    "conform_by_csv_row",
    "corrupt_parquet_error",
    "fill_config_ids",
    "is_missing",
    "open_parquet",
    "read_frame",
    "read_parquet",
    "read_table",
    "sort_rows",
    "typed_column",
    "write_parquet",
]

#: Parquet compression of every table trainscale writes.
COMPRESSION = "zstd"


# --------------------------------------------------------------------------------------------
# Conforming frames to a schema


def is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def typed_column(values: pd.Series, col: Column) -> pd.Series:
    if col.dtype == "int64":
        numbers = pd.to_numeric(values.astype(object).where(values.notna(), None))
        return pd.array(numbers, dtype="Int64") if len(values) else pd.array([], dtype="Int64")
    if col.dtype == "float64":
        return pd.to_numeric(values.astype(object).where(values.notna(), np.nan)).astype(float)
    if col.dtype == "bool":
        return values.astype(object).where(values.notna(), None).astype("boolean")
    if col.dtype == "timestamp":
        return pd.to_datetime(values).astype("datetime64[ns]")
    if isinstance(values.dtype, pd.StringDtype):
        return values.astype("string")
    # str() of every value, missing ones (None, NaN, pd.NA) null: vectorised by pandas
    return values.astype(object).astype("string")


def conform_by_csv_row(
    frame: pd.DataFrame, columns: Sequence[Column], **constants: object
) -> pd.DataFrame:
    """:func:`conform`, then the rows in the order of their ``csv_row`` (stable): the tables of
    published rows, one row per line of ``data/published/measurements.csv``."""
    frame = conform(frame, columns, **constants)
    return frame.sort_values("csv_row", kind="mergesort").reset_index(drop=True)


def conform(
    frame: pd.DataFrame, columns: Sequence[Column] = DATASET_COLUMNS, **constants: object
) -> pd.DataFrame:
    """Return ``frame`` with exactly ``columns``, in order, typed by the schema.

    Integers become nullable ``Int64``, floats ``float64`` (NaN for missing), flags nullable
    ``boolean``, text nullable ``string``, points in time ``datetime64[ns]`` (NaT for missing).
    Missing columns are null; extra columns are dropped. ``constants`` set a column to one value
    on every row (for example ``study="smoke"``).

    Raises
    ------
    TypeError or ValueError
        If a value cannot be represented in its column's type (a bug upstream, not user input).
    """
    frame = frame.reset_index(drop=True)
    out = {}
    for col in columns:
        if col.name in constants:
            values = pd.Series([constants[col.name]] * len(frame), dtype=object)
        elif col.name in frame.columns:
            values = frame[col.name]
        else:
            values = pd.Series([None] * len(frame), dtype=object)
        out[col.name] = typed_column(values, col)
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def sort_rows(frame: pd.DataFrame, first: Sequence[str] = ()) -> pd.DataFrame:
    """Sort rows by ``first``, then by every other column in order (nulls last); stable."""
    keys = [*first, *(c for c in frame.columns if c not in first)]
    if frame.empty:
        return frame.reset_index(drop=True)
    return frame.sort_values(keys, kind="mergesort", na_position="last").reset_index(drop=True)


def _text(value: object, default: str = "na") -> str:
    return default if is_missing(value) or value == "" else str(value)


def _id_text(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Arrow values as text (null where missing or empty; integers without a decimal)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_floating(values.type):
        values = pc.cast(values, pa.int64())
    if values.type != pa.string():
        values = pc.cast(values, pa.string())
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)


def _frame_text(frame: pd.DataFrame, name: str) -> pa.Array:
    series = frame[name]
    if series.dtype == object:  # mixed values (e.g. micro_batch "auto"): as str() writes them
        return _id_text(pa.array([None if is_missing(v) else str(v) for v in series], pa.string()))
    return _id_text(pa.Array.from_pandas(series))


_ID_COLUMNS = (
    "model", "layers", "hidden", "gpu", "num_gpus", "sharding", "tp", "pp", "cp", "vpp",
    "seq_len", "global_batch", "micro_batch", "recompute", "precision",
)  # fmt: skip


def _config_id_array(text: Mapping[str, pa.Array]) -> pa.Array:
    """:func:`config_ids` from the id columns as text (:func:`_id_text`; absent ones null)."""

    def required(name: str, prefix: str = "") -> pa.Array:
        return pc.binary_join_element_wise(prefix, pc.fill_null(text[name], "na"), "")

    none = pa.scalar(None, pa.string())
    custom = pc.binary_join_element_wise(required("layers", "l"), required("hidden", "h"), "-")
    parts = [pc.coalesce(text["model"], custom), required("gpu"), required("num_gpus", "n"),
             required("sharding"), required("tp", "tp"), required("pp", "pp")]  # fmt: skip
    for name in ("cp", "vpp"):
        above = pc.fill_null(pc.greater(pc.cast(text[name], pa.int64()), 1), False)
        parts.append(pc.if_else(above, required(name, name), none))
    parts += [required("seq_len", "s"), required("global_batch", "gb"),
              required("micro_batch", "mb")]  # fmt: skip
    for name, default in (("recompute", "none"), ("precision", "bf16")):
        shown = pc.fill_null(pc.not_equal(text[name], default), False)
        parts.append(pc.if_else(shown, text[name], none))
    return pc.binary_join_element_wise(*parts, "_", null_handling="skip")


def config_ids(frame: pd.DataFrame) -> pd.Series:
    """Readable configuration names, e.g. ``llama2-7b_h100-sxm-80gb_n2048_fsdp_tp1_pp1_s4096_
    gb2048_mb1``: model (or ``l<layers>-h<hidden>`` for a custom shape), GPU, GPU count,
    sharding, tp, pp, cp and vpp when above 1, sequence length, global and micro batch, then
    recomputation and precision when not the defaults (none, bf16). A missing value reads
    ``na``. Vectorised (Arrow string kernels, no Python per row)."""
    if len(frame) == 0:
        return pd.Series([], dtype="string", index=frame.index)
    null = pa.nulls(len(frame), pa.string())
    text = {n: _frame_text(frame, n) if n in frame.columns else null for n in _ID_COLUMNS}
    ids = _config_id_array(text)
    return pd.Series(ids.to_numpy(zero_copy_only=False), dtype="string", index=frame.index)


def fill_config_ids(table: pa.Table) -> pa.Table:
    """``table`` with its null or empty ``config_id`` values filled (:func:`config_ids`)."""
    index = table.schema.get_field_index("config_id")
    current = table.column(index).combine_chunks()
    empty = pc.fill_null(pc.equal(current, ""), True)
    if not pc.any(empty).as_py():
        return table
    null = pa.nulls(len(table), pa.string())
    names = set(table.column_names)
    text = {n: _id_text(table.column(n)) if n in names else null for n in _ID_COLUMNS}
    filled = pc.if_else(empty, _config_id_array(text), current)
    return table.set_column(index, table.schema.field(index), filled)


# --------------------------------------------------------------------------------------------
# Single tables


def _table(frame: pd.DataFrame, columns: Sequence[Column], metadata: Mapping[str, str]) -> pa.Table:
    schema = arrow_schema(tuple(columns), **dict(metadata))
    table = pa.Table.from_pandas(conform(frame, columns), schema=schema, preserve_index=False)
    return table.replace_schema_metadata(schema.metadata)


def _write_table(table: pa.Table, path: Path) -> None:
    """Write to a temporary file in the target folder, then rename onto ``path``."""
    with atomic_path(path) as temp:
        pq.write_table(table, temp, compression=COMPRESSION)


def write_parquet(
    frame: pd.DataFrame,
    path: str | Path,
    columns: Sequence[Column],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``frame`` conformed to ``columns`` as one Parquet file, deterministically.

    Row order is kept; ``metadata`` goes into the file (schema) metadata. The file appears only
    when complete (temporary file, then rename).
    """
    _write_table(_table(frame, columns, metadata or {}), Path(path))


class ParquetStream:
    """Write one Parquet file batch by batch: ``with ParquetStream(path, columns) as out:
    out.write(frame)``.

    Each :meth:`write` conforms its frame to ``columns`` (or takes a :class:`pyarrow.Table` with
    the same fields) and appends it as row groups, so memory holds one batch, not the table. The
    file is written to a temporary name and renamed onto ``path`` only when the ``with`` block
    ends without an exception; on an exception nothing is left behind. The same batches give the
    same bytes.
    """

    def __init__(
        self,
        path: str | Path,
        columns: Sequence[Column],
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.columns = tuple(columns)
        self.metadata = dict(metadata or {})
        self.schema = arrow_schema(self.columns, **self.metadata)
        self.rows = 0
        self._atomic = atomic_path(self.path)
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> ParquetStream:
        temp = self._atomic.__enter__()
        try:
            self._writer = pq.ParquetWriter(temp, self.schema, compression=COMPRESSION)
        except BaseException as error:
            self._atomic.__exit__(type(error), error, error.__traceback__)
            raise
        return self

    def write(self, batch: pd.DataFrame | pa.Table) -> None:
        """Append ``batch`` (rows in order); an empty batch adds nothing."""
        assert self._writer is not None, "use ParquetStream in a with block"
        if len(batch) == 0:
            return
        if isinstance(batch, pa.Table):
            table = batch.select([c.name for c in self.columns]).cast(self.schema)
        else:
            table = _table(batch, self.columns, self.metadata)
        self._writer.write_table(table.replace_schema_metadata(self.schema.metadata))
        self.rows += len(batch)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        except BaseException as close_error:
            if kind is None:
                kind, error, traceback = type(close_error), close_error, close_error.__traceback__
            self._atomic.__exit__(kind, error, traceback)
            raise
        self._atomic.__exit__(kind, error, traceback)


def as_pandas_reads(frame: pd.DataFrame, columns: Sequence[Column]) -> pd.DataFrame:
    """``frame`` (conformed) with the types :func:`pandas.read_parquet` gives: int64 (float64
    with NaN where a column has nulls), float64, str, bool (object where a column has nulls)."""
    schema = arrow_schema(tuple(columns))
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    return table.replace_schema_metadata(None).to_pandas()  # no pandas metadata: default types


def corrupt_parquet_error(path: str | Path, error: Exception) -> InputFileError:
    """The error for a Parquet file that cannot be read: it names the file, pyarrow's reason,
    and says to delete it so that the workflow writes it again."""
    reason = " ".join(str(error).split()) or type(error).__name__
    return InputFileError(
        path,
        f"not a readable Parquet file ({reason}); it is corrupt or truncated: delete it and "
        "run again (Snakemake rewrites a missing intermediate file)",
    )


#: What pyarrow raises on a file that is not Parquet, truncated or damaged (``ArrowInvalid``,
#: ``ArrowIOError`` = ``OSError``, a bad footer or page as ``ArrowException``).
_READ_ERRORS = (pa.ArrowException, OSError, ValueError)


def read_table(path: str | Path, **kwargs: Any) -> pa.Table:
    """:func:`pyarrow.parquet.read_table` that turns a corrupt file into an
    :class:`~trainscale.errors.InputFileError` (:func:`corrupt_parquet_error`); a missing file
    stays :class:`FileNotFoundError`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    try:
        return pq.read_table(path, **kwargs)
    except _READ_ERRORS as error:
        raise corrupt_parquet_error(path, error) from error


def read_frame(path: str | Path, **kwargs: Any) -> pd.DataFrame:
    """:func:`pandas.read_parquet` (same keywords, e.g. ``dtype_backend``) that turns a corrupt
    file into an :class:`~trainscale.errors.InputFileError` naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    try:
        return pd.read_parquet(path, **kwargs)
    except _READ_ERRORS as error:
        raise corrupt_parquet_error(path, error) from error


@contextmanager
def open_parquet(path: str | Path) -> Iterator[pq.ParquetFile]:
    """``with open_parquet(path) as f:`` a :class:`pyarrow.parquet.ParquetFile`; a corrupt
    file, on opening or while its batches are read inside the block, is an
    :class:`~trainscale.errors.InputFileError` naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    try:
        with pq.ParquetFile(path) as handle:
            yield handle
    except _READ_ERRORS as error:
        raise corrupt_parquet_error(path, error) from error


def read_parquet(path: str | Path, columns: Sequence[Column]) -> pd.DataFrame:
    """Read one Parquet file with exactly ``columns``, in order (missing ones null).

    Types are those :func:`pandas.read_parquet` gives (no ``pd.NA``); :func:`conform` turns
    the frame back into nullable types. A corrupt file is an
    :class:`~trainscale.errors.InputFileError` naming it (:func:`read_frame`).
    """
    return as_pandas_reads(conform(read_frame(path), columns), columns)
