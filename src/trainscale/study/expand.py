"""Expanding a whole study, block by block, and counting what each rule dropped.

:func:`expand_blocks` runs :func:`trainscale.study.rules.expand_block` on every block of
:func:`trainscale.study.grid.grid_blocks`; :class:`ExpansionSummary` counts the rows kept and
dropped (by study key or column) and checks the outcome: a study with no row left is an error
naming the file and what removed the rows, one that loses more than half of its rows gets a
warning with the counts. :func:`expand_study` gathers the blocks in memory (small studies and
tests); the workflow streams them with :func:`trainscale.study.chunks.write_study_configurations`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.study.grid import BLOCK_ROWS, grid_blocks
from trainscale.study.rules import expand_block
from trainscale.study.spec import Study

__all__ = ["ExpansionSummary", "expand_blocks", "expand_study"]


def _step(column: str) -> str:
    """What dropped a row, for messages: ``filter 'fits_memory'``, ``derive '...'``, ``the
    validator ('tp')``."""
    if column.startswith("filters."):
        return f"filter '{column.removeprefix('filters.')}'"
    if column.startswith("derive."):
        return f"derive '{column.removeprefix('derive.')}'"
    return f"the validator ('{column}')"


@dataclass(slots=True)
class ExpansionSummary:
    """Row counts of one study's expansion: what survived and what dropped how many rows."""

    study: Study
    grid_rows: int = 0
    kept_rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    """Study key or column that dropped a row (its first problem) -> rows, in order of first
    appearance."""
    examples: dict[str, str] = field(default_factory=dict)
    """The same keys -> the reason given for the first row each dropped."""

    def add(self, block_rows: int, configurations: pd.DataFrame, rejects: pd.DataFrame) -> None:
        """Count one block's outcome."""
        self.grid_rows += block_rows
        self.kept_rows += len(configurations)
        if rejects.empty:
            return
        rows = rejects["row"].to_numpy(dtype=np.int64)
        first = np.ones(len(rows), dtype=bool)  # each row's first problem (rows are sorted)
        first[1:] = rows[1:] != rows[:-1]
        # factorize hashes the column in place (sorting millions of strings, or copying them
        # out of Arrow, took seconds) and numbers its values in order of first appearance.
        codes, names = pd.factorize(rejects["column"][first].astype(str))
        counts = np.bincount(codes, minlength=len(names))
        _, where = np.unique(codes, return_index=True)
        reasons = rejects["reason"][first]
        for at, column in enumerate(names):
            self.dropped[str(column)] = self.dropped.get(str(column), 0) + int(counts[at])
            self.examples.setdefault(str(column), str(reasons.iloc[where[at]]))

    @property
    def dropped_rows(self) -> int:
        return self.grid_rows - self.kept_rows

    def _breakdown(self) -> str:
        parts = [
            f"{rows:,} by {_step(column)} (e.g. {self.examples[column]})"
            for column, rows in sorted(self.dropped.items(), key=lambda item: -item[1])
        ]
        return "; ".join(parts)

    def check(self) -> str | None:
        """Raise if no row survived; return a warning when more than half were dropped.

        Raises
        ------
        trainscale.errors.InputFileError
            Naming the study file and every filter or rule that removed rows, with counts, e.g.
            ``config/studies/x.yaml: every one of the 12 grid rows was removed: 12 by filter
            'fits_memory' (e.g. predicted 1101.4 GiB per GPU does not fit ...)``.
        """
        if self.kept_rows == 0:
            raise InputFileError(
                self.study.path,
                f"the study has no rows left: every one of the {self.grid_rows:,} grid rows "
                f"was removed: {self._breakdown()}",
            )
        if 2 * self.dropped_rows > self.grid_rows:
            share = 100 * self.dropped_rows / self.grid_rows
            return (
                f"warning: {self.study.path}: {self.dropped_rows:,} of {self.grid_rows:,} grid "
                f"rows ({share:.1f} %) were removed, {self.kept_rows:,} remain: "
                f"{self._breakdown()}"
            )
        return None


def expand_blocks(
    study: Study,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
    summary: ExpansionSummary | None = None,
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """Yield ``(configurations, rejects)`` block by block, in grid order (see
    :func:`~trainscale.study.rules.expand_block`); ``summary`` (if given) counts every block."""
    for first, block in grid_blocks(study, block_rows):
        configurations, rejects = expand_block(
            study, block, first=first, catalogue=catalogue, calibration=calibration
        )
        if summary is not None:
            summary.add(len(block), configurations, rejects)
        yield configurations, rejects


def expand_study(
    study: Study,
    *,
    catalogue: Catalogue,
    calibration: Calibration,
    block_rows: int = BLOCK_ROWS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Expand a study into ``(configurations, rejects)``, held in memory (small studies; the
    workflow streams with :func:`~trainscale.study.chunks.write_study_configurations`).

    ``configurations`` has one row per kept grid row (grid order) and the columns of
    :func:`~trainscale.study.spec.configuration_columns`; ``micro_batch`` null means ``"auto"``.
    ``rejects`` has the same columns for every dropped row plus
    :data:`trainscale.schema.REJECT_COLUMNS` (``row``, ``column``, ``reason``), one line per
    problem. Rows are dropped, in this order, by ``derive``
    (derived value not a whole number), ``filters`` (``max_model_parallel``, ``max_tp_per_node``),
    the simulator's validator (checked with ``micro_batch`` 1 for ``"auto"`` rows: the resolved
    value is a divisor of the local batch that passes the same checks) and ``fits_memory``.

    Raises
    ------
    trainscale.errors.ConfigurationError
        With ``filters.drop_invalid: false``, listing every row of the first block that
        ``derive`` or the validator rejects (row = position in the grid).
    trainscale.errors.InputFileError
        When no row survives (see :meth:`ExpansionSummary.check`).
    """
    summary = ExpansionSummary(study)
    parts = list(expand_blocks(study, catalogue=catalogue, calibration=calibration,
                               block_rows=block_rows, summary=summary))  # fmt: skip
    summary.check()
    configurations = pd.concat([c for c, _ in parts], ignore_index=True)
    rejects = pd.concat([r for _, r in parts], ignore_index=True)
    return configurations, rejects
