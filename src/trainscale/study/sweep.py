"""Studies: one sweep of training configurations per file (``config/studies/<name>.yaml``).

This module gathers the public names of the study pipeline, each defined in the module of its
step, so that ``from trainscale.study.sweep import ...`` keeps working:

- :mod:`trainscale.study.spec`: the records, :class:`Study` and :class:`Filters`, and
  :func:`configuration_columns`;
- :mod:`trainscale.study.load`: :func:`load_study` reads a file and checks it against the schema
  and the catalogues (GPU and model names); any problem raises
  :class:`~trainscale.errors.InputFileError` naming the file, the key and what is allowed. The
  workflow calls it at start-up, so an invalid study stops the run before any job starts;
- :mod:`trainscale.study.grid`: :func:`grid_blocks` yields the grid in blocks of
  :data:`BLOCK_ROWS` rows by index arithmetic over the sweep lists (the full grid is never
  built);
- :mod:`trainscale.study.rules`: :func:`expand_block` applies ``derive``, the filters, the
  simulator's validator and ``fits_memory`` (a prediction of the block) to one block;
- :mod:`trainscale.study.expand`: :func:`expand_blocks`, :func:`expand_study` (in memory, for
  small studies and tests) and :class:`ExpansionSummary`, which counts what was dropped: a
  study with no row left is an error naming the file and what removed the rows; one that loses
  more than half of its rows gets a warning with the counts;
- :mod:`trainscale.study.chunks`: :func:`write_study_configurations` streams a study into one
  configuration file per simulate job (``rows_per_job`` kept rows each), a rejects table and a
  small JSON of counts, in bounded memory; :func:`chunk_count` sizes the jobs;
- :mod:`trainscale.study.simulate`: :func:`simulate_configurations` simulates one chunk.

In the configuration table ``micro_batch`` is a nullable integer: null stands for ``"auto"``
(:data:`AUTO`), resolved per row by :func:`trainscale.study.micro_batch.resolve_micro_batch`
when the chunk is simulated (so a large sweep resolves in parallel jobs).
"""

from __future__ import annotations

from trainscale.study.chunks import chunk_count, write_study_configurations
from trainscale.study.expand import ExpansionSummary, expand_blocks, expand_study
from trainscale.study.grid import BLOCK_ROWS, grid_blocks
from trainscale.study.load import load_study
from trainscale.study.rules import expand_block
from trainscale.study.simulate import simulate_configurations
from trainscale.study.spec import AUTO, Filters, Study, configuration_columns

__all__ = [
    "AUTO",
    "BLOCK_ROWS",
    "ExpansionSummary",
    "Filters",
    "Study",
    "chunk_count",
    "configuration_columns",
    "expand_block",
    "expand_blocks",
    "expand_study",
    "grid_blocks",
    "load_study",
    "simulate_configurations",
    "write_study_configurations",
]
