"""The knee of a scale-out series: where adding GPUs stops paying.

For one series (rows that differ only in their GPU count, ``x``), sorted by ``x``:

- per-GPU throughput ``p(x) = tokens_per_s / x`` and its best so far, ``best(x) = max p(x')`` for
  ``x' ≤ x``;
- the marginal throughput of a step from the previous count ``x₀`` to ``x``:
  ``(tokens_per_s(x) − tokens_per_s(x₀)) / (x − x₀)``, tokens/s per added GPU, compared with the
  per-GPU throughput at ``x₀``.

The knee is the smallest ``x`` at which ``p(x)`` has fallen at least ``fraction`` (default 10 %)
below ``best(x)``, or at which the marginal throughput of the step to ``x`` is below ``marginal``
(default one half) of ``p(x₀)``: a doubling then buys less than half the GPUs' worth. A series
that never meets either has no knee (``knee_x`` empty).

What causes it is read from the rows themselves, comparing the knee with the best point before
it: the batch per data-parallel rank (``global_batch / dp`` sequences), the exposed
communication and the pipeline bubble as fractions of the step. The cause named is the one whose
share of the step grew most: ``exposed collective`` or ``pipeline bubble`` (a bubble grows when the
batch per rank leaves too few micro-batches to fill the pipeline).

:func:`knee` returns one row per series with the columns of :data:`KNEE_COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = [
    "KNEE_COLUMNS",
    "KNEE_FRACTION",
    "KNEE_MARGINAL",
    "knee",
    "knee_of_series",
    "marginal_cliffs",
]

#: Per-GPU throughput this far below its best marks the knee (a fraction).
KNEE_FRACTION = 0.10
#: A step whose marginal tokens/s per added GPU is below this fraction of the per-GPU throughput
#: before it marks the knee.
KNEE_MARGINAL = 0.5

#: Columns of :func:`knee`, after the series columns.
KNEE_COLUMNS = (
    "knee_x",  # the knee's x value (GPUs); empty when the series has none
    "knee_criterion",  # "per_gpu" or "marginal"
    "best_x",  # the x of the best per-GPU throughput up to the knee
    "per_gpu_drop_pct",  # per-GPU throughput at the knee below the best, %
    "marginal_pct",  # marginal tokens/s per added GPU of the step to the knee, % of p(x0)
    "knee_local_batch",  # sequences per data-parallel rank at the knee
    "best_local_batch",  # the same at best_x
    "knee_exposed_comm_pct",  # exposed communication at the knee, % of the step
    "best_exposed_comm_pct",
    "knee_bubble_pct",  # pipeline bubble at the knee, % of the step
    "best_bubble_pct",
    "knee_cause",  # "exposed collective" or "pipeline bubble"
)


def _share(rows: pd.DataFrame, column: str) -> np.ndarray:
    if column not in rows.columns or "step_time_s" not in rows.columns:
        return np.full(len(rows), np.nan)
    return 100.0 * pd.to_numeric(rows[column]).to_numpy() / rows["step_time_s"].to_numpy()


def knee_of_series(
    rows: pd.DataFrame,
    *,
    x: str = "num_gpus",
    fraction: float = KNEE_FRACTION,
    marginal: float = KNEE_MARGINAL,
) -> dict[str, object]:
    """The knee of one series (module docstring): a dict with the keys of :data:`KNEE_COLUMNS`.

    ``rows`` holds ``x`` and ``tokens_per_s`` and, for the cause, ``global_batch``, ``dp``,
    ``step_time_s``, ``exposed_comm_s`` and ``bubble_s`` where known."""
    rows = rows.sort_values(x, kind="stable").reset_index(drop=True)
    xs = pd.to_numeric(rows[x]).to_numpy(dtype=float)
    total = pd.to_numeric(rows["tokens_per_s"]).to_numpy(dtype=float)
    per_gpu = total / xs
    best = np.maximum.accumulate(per_gpu)
    out: dict[str, object] = dict.fromkeys(KNEE_COLUMNS, np.nan)
    out["knee_criterion"] = ""
    at, criterion = None, ""
    for i in range(1, len(rows)):
        step = (total[i] - total[i - 1]) / (xs[i] - xs[i - 1])
        if per_gpu[i] <= (1.0 - fraction) * best[i]:
            at, criterion = i, "per_gpu"
        elif step < marginal * per_gpu[i - 1]:
            at, criterion = i, "marginal"
        if at is not None:
            out["marginal_pct"] = 100.0 * step / per_gpu[i - 1]
            break
    if at is None:
        return out
    b = int(np.argmax(per_gpu[: at + 1]))
    local = (
        pd.to_numeric(rows["global_batch"]).to_numpy() / pd.to_numeric(rows["dp"]).to_numpy()
        if {"global_batch", "dp"} <= set(rows.columns)
        else np.full(len(rows), np.nan)
    )
    exposed, bubble = _share(rows, "exposed_comm_s"), _share(rows, "bubble_s")
    grew_comm = exposed[at] - exposed[b]
    grew_bubble = bubble[at] - bubble[b]
    out.update(
        knee_x=xs[at], knee_criterion=criterion, best_x=xs[b],
        per_gpu_drop_pct=100.0 * (1.0 - per_gpu[at] / per_gpu[b]),
        knee_local_batch=local[at], best_local_batch=local[b],
        knee_exposed_comm_pct=exposed[at], best_exposed_comm_pct=exposed[b],
        knee_bubble_pct=bubble[at], best_bubble_pct=bubble[b],
        knee_cause="pipeline bubble" if grew_bubble > grew_comm else "exposed collective",
    )  # fmt: skip
    return out


def knee(
    rows: pd.DataFrame,
    series: Sequence[str],
    *,
    x: str = "num_gpus",
    fraction: float = KNEE_FRACTION,
    marginal: float = KNEE_MARGINAL,
) -> pd.DataFrame:
    """One row per series of ``rows`` (the ``series`` columns, then :data:`KNEE_COLUMNS`), in the
    order the series first appear; see :func:`knee_of_series`."""
    keys = [k for k in series if k in rows.columns]
    groups = rows.groupby(keys, sort=False, dropna=False) if keys else [((), rows)]
    records = []
    for key, group in groups:
        values = key if isinstance(key, tuple) else (key,)
        found = knee_of_series(group, x=x, fraction=fraction, marginal=marginal)
        records.append({**dict(zip(keys, values, strict=True)), **found})
    return pd.DataFrame(records, columns=[*keys, *KNEE_COLUMNS])


def marginal_cliffs(
    n: np.ndarray, tokens_per_s: np.ndarray, *, marginal: float = KNEE_MARGINAL
) -> list[tuple[float, float, float]]:
    """The steps of a series (``n`` increasing) whose marginal tokens/s per added GPU is below
    ``marginal`` of the per-GPU throughput before them: ``(n_from, n_to, share)`` with ``share``
    the marginal over that per-GPU throughput (a fraction). These are the steps a smooth fit
    (the USL's ``dX/dN``) draws through; a figure marks them instead."""
    n = np.asarray(n, dtype=float)
    total = np.asarray(tokens_per_s, dtype=float)
    secant = np.diff(total) / np.diff(n)
    share = secant / (total[:-1] / n[:-1])
    return [(n[i], n[i + 1], float(share[i])) for i in np.flatnonzero(share < marginal)]
