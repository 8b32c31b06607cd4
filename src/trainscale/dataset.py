"""The one dataset of every source: simulated studies, published measurements, measured runs.

- :func:`dataset_frame` gathers simulated, published and measured rows into the one dataset
  schema (:data:`trainscale.schema.DATASET_COLUMNS`), in the dataset's row order: partitions
  by source and study; a simulated study's rows in its own (grid) order; published and measured
  rows sorted by ``config_id``, then every column;
- :func:`write_dataset` / :func:`read_dataset` store it hive-partitioned as
  ``source=<source>/study=<study>/part-0.parquet``, with provenance (simulator version,
  calibration id) in each file's metadata; :func:`write_dataset_parts` writes the same files
  one partition at a time, a study streamed batch by batch (the workflow's ``dataset`` rule),
  so memory holds one batch, not one study; :func:`read_dataset` reads it back sorted;
- :func:`read_study_results` reads one study's simulated table as its partition reads.

Single tables are written and read by :mod:`trainscale.io.parquet` (``conform``,
``read_parquet``, ``write_parquet`` …); :mod:`trainscale.published.rows` turns the published
measurements and their predictions into tables.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from trainscale.io.atomic import atomic_directory, is_temporary_of
from trainscale.io.parquet import (
    COMPRESSION,
    as_pandas_reads,
    config_ids,
    conform,
    corrupt_parquet_error,
    fill_config_ids,
    is_missing,
    read_frame,
    sort_rows,
)
from trainscale.schema import (
    DATASET_COLUMNS,
    arrow_schema,
)
from trainscale.version import __version__

__all__ = [
    "PARTITION_COLUMNS",
    "dataset_frame",
    "read_dataset",
    "read_study_results",
    "remove_stale_temporaries",
    "write_dataset",
    "write_dataset_parts",
]

#: Hive partition columns of ``results/dataset``, outermost first.
#: Hive partition columns of ``results/dataset``, outermost first.
PARTITION_COLUMNS = ("source", "study")


def read_study_results(path: str | Path, study: str) -> pd.DataFrame:
    """One study's simulated table (``results/sim/<study>.parquet``) as its dataset partition
    reads: the dataset's columns, typed, ``source`` = ``sim``, ``study`` = ``study``, its
    ``config_id`` filled, rows in grid order. The per-study outputs read this rather than the
    whole dataset, so that editing one study reruns only that study's outputs."""
    frame = conform(read_frame(path), DATASET_COLUMNS, source="sim", study=study)
    frame["config_id"] = config_ids(frame)
    return frame


# --------------------------------------------------------------------------------------------
# The dataset


def _provenance(values: Iterable[object]) -> str:
    return ",".join(sorted({str(v) for v in values if not is_missing(v) and v != ""}))


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
    return fill_config_ids(table.replace_schema_metadata(None))


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
    out = _RowGroups(pq.ParquetWriter(path, schema, compression=COMPRESSION))
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
    written = []
    with atomic_directory(directory) as temp:
        for source, study in sorted(parts):
            relative = Path(f"source={source}", f"study={study}", "part-0.parquet")
            if _write_partition(parts[(source, study)], source, study, schema, temp / relative):
                written.append(directory / relative)
    return written


def remove_stale_temporaries(directory: str | Path) -> list[Path]:
    """Delete what a killed :func:`write_dataset` of ``directory`` left: sibling folders named
    exactly ``.<name>.<12 hex digits>.tmp``. Nothing else is touched. Return what was removed.

    Only one writer of a given dataset runs at a time (it is one Snakemake job's output, and
    Snakemake locks the working folder), so every such folder is stale.
    """
    directory = Path(directory)
    removed = []
    parent = directory.parent
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        if is_temporary_of(entry, directory) and entry.is_dir() and not entry.is_symlink():
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
    Types are those :func:`pandas.read_parquet` gives (see :func:`read_parquet`). A corrupt
    part is an :class:`~trainscale.errors.InputFileError` naming the folder and, in pyarrow's
    reason, the part file.
    """
    partitioning = ds.partitioning(
        pa.schema([(name, pa.string()) for name in PARTITION_COLUMNS]), flavor="hive"
    )
    try:
        dataset = ds.dataset(Path(directory), format="parquet", partitioning=partitioning)
    except (pa.ArrowException, OSError, ValueError) as error:
        raise corrupt_parquet_error(directory, error) from error
    keep = None
    if sources is not None or studies is not None:
        keep = ds.field("source").isin(pa.array(list(sources or []), pa.string())) | ds.field(
            "study"
        ).isin(pa.array(list(studies or []), pa.string()))
    try:
        table = dataset.to_table(filter=keep)
    except (pa.ArrowException, OSError, ValueError) as error:  # the message names the part
        raise corrupt_parquet_error(directory, error) from error
    frame = sort_rows(conform(table.to_pandas()), first=("source", "study", "config_id"))
    return as_pandas_reads(frame, DATASET_COLUMNS)
