"""The study record: what a validated study file holds (:class:`Study`, :class:`Filters`).

A study file (``config/studies/<name>.yaml``) is read and checked by
:func:`trainscale.study.load.load_study`; the result is a :class:`Study`. This module holds only
the records and the column set a study's configuration table has
(:func:`configuration_columns`), so that a reader of a study (figures, the report spec) needs
nothing of the simulator. Column names are those of
:data:`trainscale.schema.CONFIGURATION_COLUMNS`, units in the names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainscale.schema import CONFIGURATION_COLUMNS, Column

__all__ = ["AUTO", "Filters", "Study", "configuration_columns"]

#: The ``micro_batch`` value that asks for the largest local-batch divisor that fits in memory.
AUTO = "auto"


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """Rules that drop rows of a study's grid (``filters`` in the study file)."""

    drop_invalid: bool = True
    """Rows the validator rejects go to the rejects table (True) or fail the job (False)."""
    fits_memory: bool = False
    """Drop rows whose predicted memory per GPU exceeds the usable HBM (after simulation)."""
    max_model_parallel: int | None = None
    """Drop rows where tp·pp·cp exceeds this; None means no limit."""
    max_tp_per_node: bool = False
    """Drop rows whose tensor-parallel group spans nodes (tp > GPUs per node)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Study:
    """A validated study file."""

    name: str
    """File name without ``.yaml``; names results/sim/<name>.parquet."""
    path: str
    """The file, as given to :func:`~trainscale.study.load.load_study` (used in messages)."""
    description: str
    fixed: Mapping[str, Any]
    """Configuration column -> value for every row."""
    sweep: Mapping[str, list[Any]] = field(default_factory=dict)
    """Configuration column -> values; the grid is their cartesian product."""
    derive: Mapping[str, int] = field(default_factory=dict)
    """``global_batch_tokens`` (tokens) or ``sequences_per_dp_rank`` (sequences)."""
    filters: Filters = field(default_factory=Filters)
    rows_per_job: int | None = None
    """Configurations per simulate job; None means the workflow's default."""
    calibration: str | None = None
    """Calibration file to simulate with (``calibration:``); None means data/calibration.yaml
    (or, with :attr:`calibration_measurements`, the file the workflow calibrates from them)."""
    calibration_measurements: tuple[str, ...] = ()
    """``calibration: {measurements: [...]}``: the paths (tables, ingested Parquet, run folders)
    the workflow's rule calibrate_study calibrates this study on; empty for none."""
    report: Mapping[str, Any] = field(default_factory=dict)
    """The ``report:`` block (x axis, series, facet, best_of, metrics of the per-study outputs);
    empty means the defaults of :func:`trainscale.study.report.report_spec`."""
    bill: Mapping[str, Any] = field(default_factory=dict)
    """The ``bill:`` block (``train_tokens``, optional ``usd_per_gpu_hour`` and ``pue``): the
    points table then carries time, energy and cost to train; empty for none."""

    @property
    def grid_size(self) -> int:
        """Rows of the grid before derive and filters drop any (the product of sweep lengths)."""
        return math.prod(len(values) for values in self.sweep.values())


def configuration_columns(study: Study) -> tuple[Column, ...]:
    """The configuration columns a study's table holds (those it gives or derives), in order."""
    given = set(study.fixed) | set(study.sweep) | ({"global_batch"} if study.derive else set())
    return tuple(c for c in CONFIGURATION_COLUMNS if c.name in given)
