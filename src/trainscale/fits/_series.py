"""Shared plumbing of the fits: column checks, series iteration and (x, y) cleaning, and the small
statistics they share (R², Student-t quantiles, delta-method standard errors).

A *series* is the set of rows that share the values of the ``by`` columns (for example one
model × GPU × plan × source); every fit in :mod:`trainscale.fits` is made per series.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError

__all__: list[str] = []


def as_columns(value: str | Sequence[str] | None) -> list[str]:
    """Return ``value`` as a list of column names (a single name becomes a one-item list)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def require_columns(df: pd.DataFrame, columns: Sequence[str], *, where: str) -> None:
    """Raise :class:`TrainscaleError` naming every column of ``columns`` missing from ``df``."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TrainscaleError(
            f"{where}: missing column(s) {missing}; the table has {list(df.columns)}"
        )


def iter_series(
    df: pd.DataFrame, by: Sequence[str]
) -> Iterator[tuple[dict[str, Hashable], pd.DataFrame]]:
    """Yield ``(key, rows)`` per series, sorted by the ``by`` values; one series if ``by`` is empty.

    ``key`` maps each ``by`` column to its value. Missing values in ``by`` form their own series.
    """
    if not by:
        yield {}, df
        return
    for values, rows in df.groupby(list(by), sort=True, dropna=False, observed=True):
        yield dict(zip(by, values, strict=True)), rows


def describe(key: dict[str, Hashable]) -> str:
    """Render a series key for messages: ``model=llama2-7b, gpu=h100`` (or ``all rows``)."""
    return ", ".join(f"{k}={v}" for k, v in key.items()) or "all rows"


def clean_pairs(
    rows: pd.DataFrame, x: str, y: str, *, where: str, key: dict[str, Hashable]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Return the positive finite ``(x, y)`` values of ``rows`` and the number of rows dropped.

    Rows where ``x`` or ``y`` is missing (NaN/NA) are dropped and counted: a configuration that
    did not fit in memory has no throughput. Any other non-positive or infinite value is an
    input error, raised as :class:`TrainscaleError` naming the series and the value.
    """
    xs = pd.to_numeric(rows[x], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    ys = pd.to_numeric(rows[y], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = np.isnan(xs) | np.isnan(ys)
    xs, ys = xs[~missing], ys[~missing]
    for name, values in ((x, xs), (y, ys)):
        bad = ~np.isfinite(values) | (values <= 0)
        if bad.any():
            raise TrainscaleError(
                f"{where}: series ({describe(key)}): column '{name}' must be positive and "
                f"finite, got {values[bad][:5].tolist()}"
            )
    return xs, ys, int(missing.sum())


def r_squared(y: np.ndarray, fitted: np.ndarray) -> float:
    """Coefficient of determination ``1 - SSR/SST``; NaN when ``y`` has no spread."""
    sst = float(np.sum((y - y.mean()) ** 2))
    if sst <= 0.0:
        return float("nan")
    return 1.0 - float(np.sum((y - fitted) ** 2)) / sst


def t_quantile(level: float, dof: int) -> float:
    """Two-sided Student-t quantile for ``level`` on ``dof`` degrees of freedom (NaN if dof < 1)."""
    if dof < 1:
        return float("nan")
    # scipy.stats.t.ppf is scipy.special.stdtrit(dof, q) behind argument checks (scipy 1.x,
    # ``t_gen._ppf``); the special function alone imports in about 0.3 s against 1 s for
    # scipy.stats, paid by every figure and table job that fits. Imported here, not at import:
    # figures that draw no fit skip it.
    from scipy.special import stdtrit

    return float(stdtrit(dof, 0.5 + level / 2.0))


def delta_method_se(grad: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Delta-method standard errors ``sqrt(gᵢᵀ Σ gᵢ)`` of ``k`` quantities, one per row ``gᵢ`` of
    ``grad`` (shape (k, p): each quantity's gradient in the ``p`` parameters), ``Σ = cov`` the
    (p, p) parameter covariance; shape (k,), in the unit of the quantities. Rounding below 0 is
    clipped to 0; a NaN covariance gives NaN."""
    return np.sqrt(np.clip(np.einsum("ij,jk,ik->i", grad, cov, grad), 0.0, None))
