"""Parquet in and out: the result tables, the published and validation tables, and the dataset.

Every table is written with an explicit pyarrow schema built from :mod:`trainscale.schema`
(dtypes, and each field's unit and description in its metadata), zstd compression, columns in
schema order and no pandas metadata, so the same rows give the same bytes on every run.

- :func:`conform` gives any result-like frame exactly the columns of a schema, typed;
- :func:`write_parquet` / :func:`read_parquet` write and read one table (written to a temporary
  file and renamed, so a failed job leaves no partial file; read back with the types
  :func:`pandas.read_parquet` gives, so missing values are NaN or None, never ``pd.NA``);
  :class:`ParquetStream` writes one table batch by batch (one row group per batch), so a table
  of millions of rows is never held in memory at once;
- :func:`dataset_frame` gathers simulated, published and measured rows into the one dataset
  schema (:data:`trainscale.schema.DATASET_COLUMNS`), in the dataset's row order: partitions
  by source and study; a simulated study's rows in its own (grid) order; published and measured
  rows sorted by ``config_id``, then every column;
- :func:`write_dataset` / :func:`read_dataset` store it hive-partitioned as
  ``source=<source>/study=<study>/part-0.parquet``, with provenance (simulator version,
  calibration id) in each file's metadata; :func:`write_dataset_parts` writes the same files
  one partition at a time, a study streamed batch by batch (the workflow's ``dataset`` rule),
  so memory holds one batch, not one study; :func:`read_dataset` reads it back sorted;
- :func:`published_rows` and :func:`validation_rows` turn the published measurements and their
  predictions into tables.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from trainscale import __version__
from trainscale.configs import build_configs
from trainscale.published import PublishedData
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    PRECISIONS,
    RECOMPUTE_MODES,
    SHARDINGS,
    Column,
    arrow_schema,
    column,
)

__all__ = [
    "PARTITION_COLUMNS",
    "VALIDATION_COLUMNS",
    "ParquetStream",
    "config_ids",
    "conform",
    "dataset_frame",
    "published_rows",
    "read_dataset",
    "read_parquet",
    "read_study_results",
    "remove_stale_temporaries",
    "sort_rows",
    "validation_rows",
    "write_dataset",
    "write_dataset_parts",
    "write_parquet",
]

#: Hive partition columns of ``results/dataset``, outermost first.
PARTITION_COLUMNS = ("source", "study")

_COMPRESSION = "zstd"


def _c(name: str, dtype: str, unit: str, description: str) -> Column:
    return Column(name=name, dtype=dtype, unit=unit, description=description)  # type: ignore[arg-type]


#: Columns of ``results/validation.parquet``: one row per line of the published CSV.
VALIDATION_COLUMNS: tuple[Column, ...] = (
    _c("csv_row", "int64", "1", "line of the published CSV (the header is line 1)"),
    _c("status", "string", "1", "predicted, or rejected (the simulator cannot represent it)"),
    _c("kind", "string", "1", "throughput or collective (nccl-tests); null if rejected"),
    column("citation"),
    column("url"),
    column("table_or_figure"),
    _c("model_name", "string", "1", "the source's own model name"),
    column("published_metric"),
    _c("published_value_text", "string", "1", "the source's number as printed"),
    *CONFIGURATION_COLUMNS,
    _c("quantity", "string", "1", "what is compared: tokens_per_s_per_gpu or busbw_gbps"),
    _c("unit", "string", "1", "unit of observed and predicted: tokens/s or GB/s"),
    _c("observed", "float64", "see unit", "the published number converted to quantity"),
    _c("predicted", "float64", "see unit", "the simulator's prediction of quantity"),
    _c("error_pct", "float64", "%", "100 * (predicted - observed) / observed"),
    _c("ape_pct", "float64", "%", "absolute value of error_pct"),
    _c("flop_convention", "string", "1", "FLOP count the source used to report throughput"),
    _c("assumptions", "string", "1", "what trainscale assumed where the source is silent"),
    _c("reason", "string", "1", "why a rejected row cannot be predicted"),
    column("simulator_version"),
    column("calibration_id"),
)


# --------------------------------------------------------------------------------------------
# Conforming frames to a schema


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _typed(values: pd.Series, col: Column) -> pd.Series:
    if col.dtype == "int64":
        numbers = pd.to_numeric(values.astype(object).where(values.notna(), None))
        return pd.array(numbers, dtype="Int64") if len(values) else pd.array([], dtype="Int64")
    if col.dtype == "float64":
        return pd.to_numeric(values.astype(object).where(values.notna(), np.nan)).astype(float)
    if col.dtype == "bool":
        return values.astype(object).where(values.notna(), None).astype("boolean")
    if isinstance(values.dtype, pd.StringDtype):
        return values.astype("string")
    # str() of every value, missing ones (None, NaN, pd.NA) null: vectorised by pandas
    return values.astype(object).astype("string")


def conform(
    frame: pd.DataFrame, columns: Sequence[Column] = DATASET_COLUMNS, **constants: object
) -> pd.DataFrame:
    """Return ``frame`` with exactly ``columns``, in order, typed by the schema.

    Integers become nullable ``Int64``, floats ``float64`` (NaN for missing), flags nullable
    ``boolean``, text nullable ``string``. Missing columns are null; extra columns are dropped.
    ``constants`` set a column to one value on every row (for example ``study="smoke"``).

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
        out[col.name] = _typed(values, col)
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def sort_rows(frame: pd.DataFrame, first: Sequence[str] = ()) -> pd.DataFrame:
    """Sort rows by ``first``, then by every other column in order (nulls last); stable."""
    keys = [*first, *(c for c in frame.columns if c not in first)]
    if frame.empty:
        return frame.reset_index(drop=True)
    return frame.sort_values(keys, kind="mergesort", na_position="last").reset_index(drop=True)


def _text(value: object, default: str = "na") -> str:
    return default if _missing(value) or value == "" else str(value)


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
        return _id_text(pa.array([None if _missing(v) else str(v) for v in series], pa.string()))
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


def read_study_results(path: str | Path, study: str) -> pd.DataFrame:
    """One study's simulated table (``results/sim/<study>.parquet``) as its dataset partition
    reads: the dataset's columns, typed, ``source`` = ``sim``, ``study`` = ``study``, its
    ``config_id`` filled, rows in grid order. The per-study outputs read this rather than the
    whole dataset, so that editing one study reruns only that study's outputs."""
    frame = conform(pd.read_parquet(path), DATASET_COLUMNS, source="sim", study=study)
    frame["config_id"] = config_ids(frame)
    return frame


def _fill_config_ids(table: pa.Table) -> pa.Table:
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
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        pq.write_table(table, temp, compression=_COMPRESSION)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


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
        self._temp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(6)}.tmp")
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> ParquetStream:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._temp, self.schema, compression=_COMPRESSION)
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
            if kind is None:
                os.replace(self._temp, self.path)
        finally:
            self._temp.unlink(missing_ok=True)


def _as_pandas_reads(frame: pd.DataFrame, columns: Sequence[Column]) -> pd.DataFrame:
    """``frame`` (conformed) with the types :func:`pandas.read_parquet` gives: int64 (float64
    with NaN where a column has nulls), float64, str, bool (object where a column has nulls)."""
    schema = arrow_schema(tuple(columns))
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    return table.replace_schema_metadata(None).to_pandas()  # no pandas metadata: default types


def read_parquet(path: str | Path, columns: Sequence[Column]) -> pd.DataFrame:
    """Read one Parquet file with exactly ``columns``, in order (missing ones null).

    Types are those :func:`pandas.read_parquet` gives (no ``pd.NA``); :func:`conform` turns
    the frame back into nullable types.
    """
    return _as_pandas_reads(conform(pd.read_parquet(path), columns), columns)


# --------------------------------------------------------------------------------------------
# The dataset


def _provenance(values: Iterable[object]) -> str:
    return ",".join(sorted({str(v) for v in values if not _missing(v) and v != ""}))


#: Rows per row group of a dataset file: fixed, so the files do not depend on how the rows
#: arrived (one frame, or a study's chunks streamed one at a time).
DATASET_ROW_GROUP_ROWS = 1 << 16

#: Sources whose partitions keep their rows in the order given (a study's grid order, which the
#: study file fixes); the other sources' partitions are sorted (see :func:`dataset_frame`).
ORDERED_SOURCES = frozenset({"sim"})


def dataset_frame(
    sim: Mapping[str, pd.DataFrame],
    published: pd.DataFrame | None = None,
    measured: Sequence[pd.DataFrame] = (),
) -> pd.DataFrame:
    """All rows in the dataset schema, in the dataset's row order.

    ``sim`` maps a study name to its results (``study`` = the name, ``source`` = ``sim``);
    published rows get ``study`` = ``published``, measured rows ``study`` = ``runs``. A missing
    or empty ``config_id`` is filled from :func:`config_ids`.

    Row order: partitions by source, then study; a simulated study's rows in the order given
    (the study's grid order: deterministic, and it lets the workflow stream a study of millions
    of rows without sorting it); published and measured rows (whose file order is incidental)
    sorted by ``config_id``, then every column (nulls last).
    """
    frames = {
        ("sim", name): conform(f, DATASET_COLUMNS, source="sim", study=name)
        for name, f in sim.items()
    }
    if published is not None:
        frames[("published", "published")] = conform(
            published, DATASET_COLUMNS, source="published", study="published"
        )
    if measured:
        frames[("measured", "runs")] = conform(
            pd.concat(list(measured), ignore_index=True), DATASET_COLUMNS, source="measured",
            study="runs",
        )  # fmt: skip
    parts = []
    for key in sorted(frames):
        frame = frames[key]
        if frame.empty:
            continue
        empty = (frame["config_id"].isna() | (frame["config_id"] == "")).to_numpy(bool)
        if empty.any():
            frame.loc[empty, "config_id"] = config_ids(frame[empty]).to_numpy()
        if key[0] not in ORDERED_SOURCES:
            frame = sort_rows(frame, first=("source", "study", "config_id"))
        parts.append(frame)
    if not parts:
        return conform(pd.DataFrame(), DATASET_COLUMNS)
    return pd.concat(parts, ignore_index=True)


def write_dataset(frame: pd.DataFrame, directory: str | Path) -> list[Path]:
    """Write the dataset as ``<directory>/source=<s>/study=<t>/part-0.parquet``; return the files.

    Each file holds the dataset columns except the partition columns, in the dataset's row order
    (see :func:`dataset_frame`: a simulated study's rows as given, the other partitions sorted),
    row groups of :data:`DATASET_ROW_GROUP_ROWS` rows, and in its metadata ``source``,
    ``study``, ``rows``, ``simulator_version`` and ``calibration_id`` (the distinct values of its
    rows, comma-separated; empty for published rows) and ``writer``. The folder is built next to
    ``directory`` and renamed onto it when complete; on any error it is removed, and temporary
    folders that a killed earlier write left are removed first (:func:`remove_stale_temporaries`).
    """
    frame = conform(frame)
    parts = {
        (str(source), str(study)): (lambda columns=None, part=part: [part])
        for (source, study), part in frame.groupby(list(PARTITION_COLUMNS), sort=True)
    }
    return write_dataset_parts(parts, directory)


Loader = Callable[..., Iterable[pd.DataFrame | pa.Table | pa.RecordBatch]]


def _partition_table(
    item: pd.DataFrame | pa.Table | pa.RecordBatch, source: str, study: str, schema: pa.Schema
) -> pa.Table:
    """One batch of a partition as an Arrow table with ``schema`` (the dataset columns less the
    partition columns), ``config_id`` filled."""
    if isinstance(item, pd.DataFrame):
        frame = conform(item, DATASET_COLUMNS, source=source, study=study)
        table = pa.Table.from_pandas(frame, schema=arrow_schema(DATASET_COLUMNS),
                                     preserve_index=False)  # fmt: skip
        table = table.select(schema.names)
    else:
        if isinstance(item, pa.RecordBatch):
            item = pa.Table.from_batches([item])
        names = set(item.column_names)
        table = pa.table(
            [item.column(f.name).cast(f.type) if f.name in names else pa.nulls(len(item), f.type)
             for f in schema],
            schema=schema.remove_metadata(),
        )  # fmt: skip
    return _fill_config_ids(table.replace_schema_metadata(None))


class _RowGroups:
    """Append tables to a Parquet writer in row groups of exactly ``size`` rows (the last one
    fewer), whatever the sizes of the tables given."""

    def __init__(self, writer: pq.ParquetWriter, size: int = DATASET_ROW_GROUP_ROWS) -> None:
        self.writer, self.size = writer, size
        self.pending: list[pa.Table] = []
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if len(table):
            self.pending.append(table)
            self.rows += len(table)
        while self.rows >= self.size:
            self._emit(self.size)

    def close(self) -> None:
        if self.rows:
            self._emit(self.rows)
        self.writer.close()

    def _emit(self, rows: int) -> None:
        table = pa.concat_tables(self.pending).combine_chunks()
        self.writer.write_table(table.slice(0, rows), row_group_size=rows)
        rest = table.slice(rows)
        self.pending, self.rows = ([rest] if len(rest) else []), len(rest)


def _write_partition(load: Loader, source: str, study: str, schema: pa.Schema, path: Path) -> int:
    """Write one partition's file; return its rows (0: nothing written)."""
    provenance = ("simulator_version", "calibration_id")
    if source in ORDERED_SOURCES:  # streamed, in the order given: two passes over the loader
        rows, seen = 0, {name: set() for name in provenance}
        for item in load(columns=list(provenance)):
            table = (
                item
                if not isinstance(item, pd.DataFrame)
                else pa.Table.from_pandas(
                    conform(item, DATASET_COLUMNS)[list(provenance)], preserve_index=False
                )
            )
            rows += len(table)
            for name in provenance:
                if name in table.column_names:
                    seen[name].update(pc.unique(table.column(name)).to_pylist())
        batches: Iterable[pa.Table] = (
            _partition_table(item, source, study, schema) for item in load(columns=None)
        )
        values = {name: _provenance(seen[name]) for name in provenance}
    else:  # small (published, measured): sorted in memory
        frames = [conform(f, DATASET_COLUMNS, source=source, study=study)
                  for f in load(columns=None)]  # fmt: skip
        frames = [f for f in frames if not f.empty]
        part = pd.concat(frames, ignore_index=True) if frames else conform(pd.DataFrame())
        empty = (part["config_id"].isna() | (part["config_id"] == "")).to_numpy(bool)
        if empty.any():
            part.loc[empty, "config_id"] = config_ids(part[empty]).to_numpy()
        part = sort_rows(part, first=("source", "study", "config_id"))
        rows = len(part)
        values = {name: _provenance(part[name]) for name in provenance}
        batches = [_partition_table(part, source, study, schema)] if rows else []
    if rows == 0:
        return 0
    metadata = {"source": source, "study": study, "rows": str(rows), **values,
                "writer": f"trainscale {__version__}"}  # fmt: skip
    schema = schema.with_metadata({**(schema.metadata or {}), **{
        k.encode(): v.encode() for k, v in metadata.items()}})  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    out = _RowGroups(pq.ParquetWriter(path, schema, compression=_COMPRESSION))
    try:
        for table in batches:
            out.write(table.replace_schema_metadata(schema.metadata))
    finally:
        out.close()
    return rows


def write_dataset_parts(
    parts: Mapping[tuple[str, str], Loader], directory: str | Path
) -> list[Path]:
    """Write the dataset one partition at a time; return the files.

    ``parts`` maps ``(source, study)`` to a loader: called as ``load(columns=None)`` it returns
    that partition's rows as an iterable of frames or Arrow tables / record batches (any
    result-like columns; ``source`` and ``study`` are set from the key); with a list of column
    names it may return just those columns. A simulated study is streamed batch by batch in
    the order given (read twice: the provenance columns first, for the file's metadata), so
    memory holds one batch and one row group, not the study; the small published and measured
    partitions are sorted in memory. The files are those of :func:`write_dataset` on all rows
    at once, byte for byte.
    """
    directory = Path(directory)
    remove_stale_temporaries(directory)
    columns = tuple(c for c in DATASET_COLUMNS if c.name not in PARTITION_COLUMNS)
    schema = arrow_schema(columns)
    temp = directory.with_name(f".{directory.name}.{secrets.token_hex(6)}.tmp")
    written = []
    try:
        for source, study in sorted(parts):
            relative = Path(f"source={source}", f"study={study}", "part-0.parquet")
            if _write_partition(parts[(source, study)], source, study, schema, temp / relative):
                written.append(directory / relative)
        temp.mkdir(parents=True, exist_ok=True)
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(temp, directory)
    finally:
        if temp.exists():
            shutil.rmtree(temp)
    return written


def remove_stale_temporaries(directory: str | Path) -> list[Path]:
    """Delete what a killed :func:`write_dataset` of ``directory`` left: sibling folders named
    exactly ``.<name>.<12 hex digits>.tmp``. Nothing else is touched. Return what was removed.

    Only one writer of a given dataset runs at a time (it is one Snakemake job's output, and
    Snakemake locks the working folder), so every such folder is stale.
    """
    directory = Path(directory)
    pattern = re.compile(rf"\.{re.escape(directory.name)}\.[0-9a-f]{{12}}\.tmp")
    removed = []
    parent = directory.parent
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
            removed.append(entry)
    return sorted(removed)


def read_dataset(
    directory: str | Path,
    *,
    sources: Sequence[str] | None = None,
    studies: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read ``results/dataset`` back into one frame in the dataset schema, sorted.

    ``sources`` and ``studies`` (partition values) keep only the partitions whose source is one
    of ``sources`` or whose study is one of ``studies``; the others are never read, so a reader
    that needs the measured rows does not load a ten-million-row sweep. Both None: everything.
    Types are those :func:`pandas.read_parquet` gives (see :func:`read_parquet`).
    """
    partitioning = ds.partitioning(
        pa.schema([(name, pa.string()) for name in PARTITION_COLUMNS]), flavor="hive"
    )
    dataset = ds.dataset(Path(directory), format="parquet", partitioning=partitioning)
    keep = None
    if sources is not None or studies is not None:
        keep = ds.field("source").isin(pa.array(list(sources or []), pa.string())) | ds.field(
            "study"
        ).isin(pa.array(list(studies or []), pa.string()))
    table = dataset.to_table(filter=keep)
    frame = sort_rows(conform(table.to_pandas()), first=("source", "study", "config_id"))
    return _as_pandas_reads(frame, DATASET_COLUMNS)


# --------------------------------------------------------------------------------------------
# Published measurements


def _resolved_configuration(frame: pd.DataFrame) -> pd.DataFrame:
    """Configuration and derived columns as the simulator resolves them (catalogue shape,
    default system, defaults); rows the validator rejects keep their own values."""
    configs, valid, _ = build_configs(frame, origin="published", skip_invalid=True)
    out = frame.reset_index(drop=True).copy()
    resolved = {
        **{name: getattr(configs, name) for name in (
            "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "global_batch",
            "micro_batch", "num_gpus", "gpus_per_node", "tp", "pp", "cp", "vpp", "dp",
            "grad_accum", "sequence_parallel")},
        "mlp": np.where(configs.swiglu, "swiglu", "gelu"),
        "nic_gbps_per_gpu": configs.nic_bytes_per_s * 8 / 1e9,
        "sharding": np.array(SHARDINGS, dtype=object)[configs.sharding],
        "recompute": np.array(RECOMPUTE_MODES, dtype=object)[configs.recompute],
        "precision": np.where(configs.fp8, PRECISIONS[1], PRECISIONS[0]),
    }  # fmt: skip
    for name, values in resolved.items():
        current = (
            out[name].astype(object)
            if name in out.columns
            else pd.Series([None] * len(out), dtype=object)
        )
        current.iloc[valid] = list(values)
        out[name] = current
    return out


def published_rows(published: PublishedData) -> pd.DataFrame:
    """The published throughput rows in the dataset schema (``source`` = ``published``).

    Configuration columns are resolved as the simulator would (catalogue shapes, the GPU's
    default system where the source gives no network). Metrics: ``tokens_per_s_per_gpu`` is the
    published number converted to tokens/s per GPU with the source's FLOP convention
    (:func:`trainscale.published.observed_tokens_per_s_per_gpu`), ``tokens_per_s`` that times
    ``num_gpus``, ``step_time_s`` the published step time where the source gives one; the other
    metrics are null. ``published_value`` is the source's own number in its own unit.
    """
    throughput = published.throughput
    if throughput.empty:
        return conform(pd.DataFrame(), DATASET_COLUMNS)
    frame = _resolved_configuration(throughput)
    per_gpu = frame["observed_tokens_per_s_per_gpu"].to_numpy(dtype=float)
    own_value = pd.to_numeric(frame["published_value_text"], errors="coerce").to_numpy(float)
    is_step = (frame["published_metric"] == "step_time_ms").to_numpy(dtype=bool)
    frame["tokens_per_s_per_gpu"] = per_gpu
    frame["tokens_per_s"] = per_gpu * pd.to_numeric(frame["num_gpus"]).to_numpy(dtype=float)
    frame["step_time_s"] = np.where(is_step, own_value / 1e3, np.nan)
    frame["published_value"] = own_value
    return conform(frame, DATASET_COLUMNS, source="published", study="published")


def validation_rows(
    validated: Mapping[str, pd.DataFrame], *, calibration_id: str, simulator_version: str
) -> pd.DataFrame:
    """One row per line of the published CSV from :func:`trainscale.validation.validate_published`.

    Throughput rows compare tokens/s per GPU, collective rows nccl-tests bus bandwidth (GB/s);
    rows the simulator cannot represent are kept with status ``rejected`` and their reason.
    Columns: :data:`VALIDATION_COLUMNS`; rows sorted by ``csv_row``.
    """
    parts = []
    throughput = validated["throughput"]
    if not throughput.empty:
        parts.append(
            throughput.assign(
                status="predicted", kind="throughput", quantity="tokens_per_s_per_gpu",
                unit="tokens/s", observed=throughput["observed_tokens_per_s_per_gpu"],
                predicted=throughput["predicted_tokens_per_s_per_gpu"],
            )
        )  # fmt: skip
    collectives = validated["collectives"]
    if not collectives.empty:
        parts.append(
            collectives.assign(
                status="predicted", kind="collective", quantity="busbw_gbps", unit="GB/s",
                observed=collectives["observed_busbw_gbps"],
                predicted=collectives["predicted_busbw_gbps"],
            )
        )  # fmt: skip
    rejects = validated["rejects"]
    if not rejects.empty:
        parts.append(rejects.assign(status="rejected"))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    frame = conform(
        frame,
        VALIDATION_COLUMNS,
        simulator_version=simulator_version,
        calibration_id=calibration_id,
    )
    return frame.sort_values("csv_row", kind="mergesort").reset_index(drop=True)
