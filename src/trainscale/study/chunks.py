"""Writing a study's configuration table in chunks, one file per simulate job.

:func:`write_study_configurations` streams an expanded study
(:func:`trainscale.study.expand.expand_blocks`) into one configuration file per simulate job
(``rows_per_job`` kept rows each), a rejects table (every dropped row with its reason) and a
small JSON of counts, in bounded memory whatever the grid size. :func:`chunk_count` is the number
of jobs for a number of rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path

import pandas as pd

from trainscale.io.atomic import atomic_directory, write_text_atomic
from trainscale.io.parquet import ParquetStream, write_parquet
from trainscale.schema import REJECT_COLUMNS
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.study.expand import ExpansionSummary, expand_blocks
from trainscale.study.grid import BLOCK_ROWS
from trainscale.study.spec import Study, configuration_columns

__all__ = ["chunk_count", "write_study_configurations"]


def _check_rows_per_job(rows_per_job: int) -> None:
    if rows_per_job < 1:
        raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job}")


def chunk_count(rows: int, rows_per_job: int) -> int:
    """Jobs for ``rows`` configurations at ``rows_per_job`` each: ceil(rows / rows_per_job) ≥ 1."""
    _check_rows_per_job(rows_per_job)
    return max(1, math.ceil(rows / rows_per_job))


def _cut(
    held: list[pd.DataFrame], size: int, *, final: bool
) -> Generator[pd.DataFrame, None, list[pd.DataFrame]]:
    """Yield the parts of ``size`` rows that the ``held`` frames make, in order (with ``final``,
    the shorter rest too); return the rows left over, as a list of at most one frame."""
    if not held:
        return []
    joined = pd.concat(held, ignore_index=True) if len(held) > 1 else held[0]
    start = 0
    while len(joined) - start >= size or (final and start < len(joined)):
        part = joined.iloc[start : start + size]
        yield part
        start += len(part)
    return [joined.iloc[start:].reset_index(drop=True)] if start < len(joined) else []


def _parts(frames: Iterable[pd.DataFrame], size: int) -> Iterator[pd.DataFrame]:
    """Re-cut a stream of frames into parts of ``size`` rows (the last one fewer), in order;
    besides the frame being cut, at most one part's rows are held."""
    held: list[pd.DataFrame] = []
    rows = 0
    for frame in frames:
        if len(frame):
            held.append(frame)
            rows += len(frame)
        if rows >= size:
            held = yield from _cut(held, size, final=False)
            rows = sum(len(rest) for rest in held)  # at most one frame
    yield from _cut(held, size, final=True)


def _kept_rows(
    blocks: Iterable[tuple[pd.DataFrame, pd.DataFrame]], rejects: ParquetStream
) -> Iterator[pd.DataFrame]:
    """Pass on each block's kept rows, writing its rejected rows to ``rejects`` on the way."""
    for configurations, block_rejects in blocks:
        rejects.write(block_rejects)
        yield configurations


def write_study_configurations(
    study: Study,
    *,
    directory: str | Path,
    rejects: str | Path,
    counts: str | Path,
    rows_per_job: int,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
) -> tuple[ExpansionSummary, str | None]:
    """Expand a study block by block and write its tables; return the summary and warning.

    - ``directory``/``<i>.parquet``: chunk ``i`` of the kept rows (grid order), ``rows_per_job``
      rows each, the last one fewer; one file per simulate job, so a job reads only its rows;
    - ``rejects``: every dropped row with its reason (:data:`trainscale.schema.REJECT_COLUMNS`);
    - ``counts``: JSON with ``chunks`` (the number of files), ``rows``, ``grid_rows``,
      ``rows_per_job`` and ``dropped`` (study key or column -> rows), which the workflow's
      checkpoint reads to plan one job per chunk.

    Memory holds one block (``block_rows`` grid rows) and at most one chunk of kept rows.
    Nothing is left behind when it fails: the chunk folder is built next to ``directory`` and
    renamed onto it at the end, and ``counts`` is written last.

    Raises
    ------
    trainscale.errors.InputFileError
        When no row survives (no file is written); see
        :meth:`~trainscale.study.expand.ExpansionSummary.check`.
    trainscale.errors.ConfigurationError
        With ``filters.drop_invalid: false`` and an invalid row.
    """
    _check_rows_per_job(rows_per_job)
    directory, counts = Path(directory), Path(counts)
    columns = configuration_columns(study)
    metadata = {"study": study.name}
    summary = ExpansionSummary(study)
    blocks = expand_blocks(
        study, catalogue=catalogue, calibration=calibration, block_rows=block_rows, summary=summary
    )
    chunks = 0
    with (
        atomic_directory(directory) as temp,
        ParquetStream(rejects, (*columns, *REJECT_COLUMNS), metadata) as out,
    ):
        for part in _parts(_kept_rows(blocks, out), rows_per_job):
            write_parquet(part, temp / f"{chunks}.parquet", columns, metadata)
            chunks += 1
        warning = summary.check()  # raises before the rejects file is renamed into place
    record = {
        "study": study.name,
        "grid_rows": summary.grid_rows,
        "rows": summary.kept_rows,
        "rows_per_job": rows_per_job,
        "chunks": chunks,
        "dropped": summary.dropped,
    }
    write_text_atomic(counts, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return summary, warning
