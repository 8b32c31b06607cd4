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
from pathlib import Path

import pandas as pd

from trainscale.io.atomic import atomic_directory, write_text_atomic
from trainscale.io.parquet import ParquetStream, write_parquet
from trainscale.schema import REJECT_COLUMNS, Column
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


class _ChunkWriter:
    """Collects kept rows and writes them as ``<i>.parquet`` files of ``rows_per_job`` rows
    into ``folder``; at most one chunk of rows is held at a time."""

    def __init__(
        self,
        folder: Path,
        rows_per_job: int,
        columns: tuple[Column, ...],
        metadata: dict[str, str],
    ) -> None:
        self.folder, self.rows_per_job = folder, rows_per_job
        self.columns, self.metadata = columns, metadata
        self.chunks = 0  # files written so far
        self._pending: list[pd.DataFrame] = []
        self._pending_rows = 0

    def add(self, configurations: pd.DataFrame) -> None:
        """Hold ``configurations`` (kept rows, grid order); write every full chunk."""
        if len(configurations):
            self._pending.append(configurations)
            self._pending_rows += len(configurations)
        if self._pending_rows >= self.rows_per_job:
            self._flush(final=False)

    def close(self) -> None:
        """Write the rows still held (the last chunk, which may be short)."""
        self._flush(final=True)

    def _flush(self, final: bool) -> None:
        if not self._pending:
            return
        pending = self._pending
        frame = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
        start = 0
        while len(frame) - start >= self.rows_per_job or (final and start < len(frame)):
            part = frame.iloc[start : start + self.rows_per_job]
            write_parquet(part, self.folder / f"{self.chunks}.parquet", self.columns, self.metadata)
            self.chunks += 1
            start += len(part)
        self._pending = [frame.iloc[start:].reset_index(drop=True)] if start < len(frame) else []
        self._pending_rows = len(frame) - start


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
    with atomic_directory(directory) as temp:
        writer = _ChunkWriter(temp, rows_per_job, columns, metadata)
        with ParquetStream(rejects, (*columns, *REJECT_COLUMNS), metadata) as out:
            for configurations, block_rejects in expand_blocks(
                study, catalogue=catalogue, calibration=calibration, block_rows=block_rows,
                summary=summary,
            ):  # fmt: skip
                out.write(block_rejects)
                writer.add(configurations)
            writer.close()
            warning = summary.check()  # raises before the rejects file is renamed into place
    record = {
        "study": study.name,
        "grid_rows": summary.grid_rows,
        "rows": summary.kept_rows,
        "rows_per_job": rows_per_job,
        "chunks": writer.chunks,
        "dropped": summary.dropped,
    }
    write_text_atomic(counts, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return summary, warning
