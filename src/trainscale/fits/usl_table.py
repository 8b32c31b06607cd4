"""Universal Scalability Law fits per series of a long table, and a fit's curve with its band.

:func:`fit_usl_table` fits :func:`~trainscale.fits.usl_fit.fit_usl` to every series (the rows
that share the ``by`` values) and returns one row per series, with the columns of
:data:`trainscale.schema.USL_COLUMNS`; :func:`usl_curve` evaluates one fit on a grid of GPU
counts with a pointwise delta-method confidence band, for drawing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.fits._series import (
    as_columns,
    clean_pairs,
    delta_method_se,
    describe,
    iter_series,
    require_columns,
    t_quantile,
)
from trainscale.fits.usl_fit import NStarCi, UslFit, fit_clean_points
from trainscale.fits.usl_law import grad_log_x
from trainscale.schema import USL_COLUMNS, names

__all__ = ["fit_usl_table", "usl_curve"]


def fit_usl_table(
    df: pd.DataFrame,
    *,
    by: str | Sequence[str] = (),
    n: str = "num_gpus",
    x: str = "tokens_per_s",
    level: float = 0.95,
    n_star_ci: NStarCi = "delta",
    rng: np.random.Generator | None = None,
    n_boot: int = 500,
) -> pd.DataFrame:
    """Fit the USL per series of a long table.

    Parameters
    ----------
    df : pandas.DataFrame
        Long table, one row per configuration (and replicate).
    by : str or sequence of str, default ()
        Columns that define a series (e.g. ``["model", "gpu", "plan", "source"]``).
    n : str, default "num_gpus"
        GPU-count column.
    x : str, default "tokens_per_s"
        Throughput column (whole job, e.g. tokens/s). Rows where it is missing are dropped.
    level, n_star_ci, rng, n_boot
        As in :func:`fit_usl`; one ``rng`` is shared, series in sorted order.

    Returns
    -------
    pandas.DataFrame
        One row per series: the ``by`` columns, ``metric`` (the ``x`` column name) and the
        fields of :class:`UslFit` except ``cov_theta`` (see :data:`trainscale.schema.USL_COLUMNS`).

    Raises
    ------
    TrainscaleError
        A column is missing or a value is non-positive or infinite (the series is named).
    """
    by_cols = as_columns(by)
    require_columns(df, [*by_cols, n, x], where="fit_usl_table")
    rows = []
    for key, series in iter_series(df, by_cols):
        ns, xs, dropped = clean_pairs(series, n, x, where="fit_usl_table", key=key)
        if (ns < 1).any():
            raise TrainscaleError(
                f"fit_usl_table: series ({describe(key)}): '{n}' must be >= 1, "
                f"got {ns[ns < 1][:5].tolist()}"
            )
        notes = [f"{dropped} row(s) with missing {n} or {x} dropped"] if dropped else []
        fit = fit_clean_points(
            ns, xs, level=level, n_star_ci=n_star_ci, rng=rng, n_boot=n_boot, notes=notes
        )
        rows.append({**key, "metric": x, **fit.to_dict()})
    out = pd.DataFrame(rows, columns=[*by_cols, *names(USL_COLUMNS)])
    return out.astype({"n": "int64", "dof": "int64", "converged": "bool", "note": "str"})


def usl_curve(
    fit: UslFit, n_grid: np.ndarray | Sequence[float], *, level: float | None = None
) -> pd.DataFrame:
    """Fitted USL throughput on a grid of GPU counts, with a pointwise confidence band.

    Parameters
    ----------
    fit : UslFit
        A fit from :func:`fit_usl`.
    n_grid : array_like, shape (k,)
        GPU counts to evaluate (≥ 1), e.g. ``numpy.geomspace(8, 2048, 200)``.
    level : float, optional
        Band level; default the fit's ``level``.

    Returns
    -------
    pandas.DataFrame
        ``k`` rows: ``n`` (GPUs), ``x`` (fitted throughput, unit of the fitted data),
        ``x_ci_low`` and ``x_ci_high`` (delta-method band on ``ln X``, Student-t on the fit's
        degrees of freedom; NaN when the fit has no covariance).
    """
    grid = np.asarray(n_grid, dtype=float).ravel()
    level = fit.level if level is None else level
    x = fit.predict(grid)
    grad = grad_log_x(grid, fit.theta)
    se_log = delta_method_se(grad, fit.cov)
    half = t_quantile(level, fit.dof) * se_log
    return pd.DataFrame(
        {"n": grid, "x": x, "x_ci_low": x * np.exp(-half), "x_ci_high": x * np.exp(half)}
    )
