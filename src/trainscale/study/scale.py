"""How long a study will take, said before it starts (a large sweep is never silent).

A study runs as one expansion job (the ``study_configurations`` checkpoint: derive, filters,
validator, ``fits_memory``) and then ``ceil(kept rows / rows_per_job)`` simulate jobs. Each
simulate job pays a fixed start (a fresh Python importing the simulator and loading the
catalogues and calibration) on top of its rows, so a sweep of 10^7 rows at the default 2,000 rows
per job plans about 5,000 jobs whose time is mostly start-up. :func:`size_note` turns the counts
into a note with the job count and an estimated time from :data:`RATES`, measured by
``benchmarks/study_rate.py``; the workflow prints it at start-up for every study of at least
:data:`LARGE_STUDY_JOBS` jobs or :data:`LARGE_STUDY_S` seconds (from the grid size: an upper bound,
as the filters have not run yet), and the checkpoint prints it again with the exact job count.

The estimate leaves out Snakemake's own scheduling per job and the study's table and dataset
jobs, and it assumes the measuring machine's speed: it is an order of magnitude, said as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["LARGE_STUDY_JOBS", "LARGE_STUDY_S", "RATES", "Rates", "estimate_s", "size_note"]


@dataclass(frozen=True, slots=True)
class Rates:
    """Measured speeds of a study's jobs (one core each)."""

    expand_rows_per_s: float
    """Grid rows per second of the expansion (all filters, ``fits_memory`` included)."""
    simulate_rows_per_s: float
    """Kept rows per second of a simulate job (``"auto"`` micro-batches resolved)."""
    job_start_s: float
    """Seconds one job spends starting (Python, imports, catalogues, calibration)."""
    source: str
    """Where the numbers come from (command, machine, date)."""


#: ``nice python benchmarks/study_rate.py`` on the project's shared 2-core machine (2026-12-03):
#: 100,000 grid rows expanded in 2.09 s (47,880 rows/s), 20,000 rows simulated in 0.34 s
#: (58,566 rows/s), a job started in 1.10 s (best of 3).
RATES = Rates(
    expand_rows_per_s=47_880.0,
    simulate_rows_per_s=58_566.0,
    job_start_s=1.10,
    source="measured with benchmarks/study_rate.py on a 2-core machine",
)
#: Studies that plan at least this many simulate jobs get a note at start-up.
LARGE_STUDY_JOBS = 1000
#: ... and so do those estimated to take at least this many seconds.
LARGE_STUDY_S = 600.0


def estimate_s(
    grid_rows: int, rows: int, rows_per_job: int, cores: int = 1, rates: Rates = RATES
) -> float:
    """Estimated wall seconds of a study: the expansion of ``grid_rows`` (one job) and then
    ``ceil(rows / rows_per_job)`` simulate jobs of ``job_start_s`` plus their rows, ``cores`` at
    a time."""
    jobs = max(1, math.ceil(rows / rows_per_job))
    expand = rates.job_start_s + grid_rows / rates.expand_rows_per_s
    simulate = jobs * rates.job_start_s + rows / rates.simulate_rows_per_s
    return expand + simulate / max(cores, 1)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def size_note(
    path: str,
    grid_rows: int,
    rows_per_job: int,
    cores: int | None,
    *,
    kept_rows: int | None = None,
    rates: Rates = RATES,
) -> str | None:
    """A note on a large study's jobs and time, or None when it is small.

    ``kept_rows`` None means before expansion: the jobs are counted from the grid (an upper
    bound, said so). ``cores`` None (unknown) estimates for one core.
    """
    rows = grid_rows if kept_rows is None else kept_rows
    jobs = max(1, math.ceil(rows / rows_per_job))
    seconds = estimate_s(grid_rows, rows, rows_per_job, cores or 1, rates)
    if jobs < LARGE_STUDY_JOBS and seconds < LARGE_STUDY_S:
        return None
    planned = (
        f"will plan up to {jobs:,} simulate jobs of {rows_per_job:,} rows (fewer if its filters "
        f"drop rows)" if kept_rows is None
        else f"keeps {kept_rows:,} rows: {jobs:,} simulate jobs of {rows_per_job:,} rows"
    )  # fmt: skip
    per_job = rates.job_start_s + rows_per_job / rates.simulate_rows_per_s
    return (
        f"note: {path}: {grid_rows:,} grid rows {planned}; estimated "
        f"{_duration(seconds)} at {cores or 1} core(s) (expansion at "
        f"{rates.expand_rows_per_s:,.0f} grid rows/s, then about {per_job:.2f} s per job: "
        f"{rates.job_start_s:.2f} s to start plus {rates.simulate_rows_per_s:,.0f} rows/s; "
        f"{rates.source}). A larger rows_per_job plans fewer jobs."
    )
