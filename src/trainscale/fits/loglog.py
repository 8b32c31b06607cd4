"""Power-law (log-log) fits of a metric against GPU count, per series.

The model is ``log2(y) = intercept + slope * log2(x)``, i.e. ``y = 2**intercept * x**slope``:
``slope`` is the elasticity of ``y`` in ``x`` (1 = linear scaling, 0 = flat), and doubling ``x``
multiplies ``y`` by ``2**slope``. Fitted by ordinary least squares (statsmodels) with HC3
heteroskedasticity-robust standard errors and Student-t intervals on ``n - 2`` degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from trainscale.fits._series import (
    as_columns,
    clean_pairs,
    iter_series,
    r_squared,
    require_columns,
)
from trainscale.schema import LOGLOG_COLUMNS, names

__all__ = ["fit_loglog"]

# A point whose leverage is this close to 1 makes HC3's 1/(1 - h) blow up.
_LEVERAGE_TOL = 1e-9


def fit_loglog(
    df: pd.DataFrame,
    *,
    y: str | Sequence[str],
    x: str = "num_gpus",
    by: str | Sequence[str] = (),
    level: float = 0.95,
) -> pd.DataFrame:
    """Fit ``log2(y) ~ log2(x)`` per series with HC3 robust errors.

    Parameters
    ----------
    df : pandas.DataFrame
        Long table, one row per configuration (and replicate); replicates at the same ``x`` are
        kept as separate points.
    y : str or sequence of str
        Metric column(s) to fit, e.g. ``"tokens_per_s_per_gpu"`` (tokens/s) or
        ``"power_w_per_gpu"`` (W); one result row per series and metric.
    x : str, default "num_gpus"
        Scaling variable (GPUs in the job, count).
    by : str or sequence of str, default ()
        Columns that define a series, e.g. ``["model", "gpu", "plan", "source"]``; empty fits
        all rows as one series.
    level : float, default 0.95
        Confidence level of the intervals.

    Returns
    -------
    pandas.DataFrame
        One row per series and metric, sorted by ``by`` then ``y`` order, with the ``by``
        columns followed by :data:`trainscale.schema.LOGLOG_COLUMNS`:

        - ``metric`` (str): the ``y`` column fitted;
        - ``n`` (int): points used (rows with missing ``x`` or ``y`` are dropped and noted);
        - ``x_min``, ``x_max`` (float): range of ``x`` covered, in ``x``'s unit;
        - ``slope``, ``slope_se``, ``slope_ci_low``, ``slope_ci_high`` (float, dimensionless):
          elasticity of ``y`` in ``x``, its HC3 standard error and t interval;
        - ``intercept`` (float): ``log2(y)`` at ``x = 1``, in log2 of ``y``'s unit;
        - ``r2`` (float): R² on the log2 scale (NaN when ``log2(y)`` has no spread);
        - ``pct_change_per_doubling`` with ``_ci_low``/``_ci_high`` (float, %):
          ``100 * (2**slope - 1)``, the change of ``y`` when ``x`` doubles, and its interval
          (the slope interval's ends mapped through the same monotone function);
        - ``note`` (str): why a value is NaN, or what was dropped; ``""`` when nothing to say.

        HC3 is undefined with ``n <= 2`` points or when a point has leverage 1 (e.g. three
        points of which two share ``x``): the slope is still estimated when ``x`` takes two
        distinct values, but standard error and intervals are NaN and ``note`` says why.

    Raises
    ------
    TrainscaleError
        A column is missing, or an ``x`` or ``y`` value is non-positive or infinite.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"num_gpus": [8, 16, 32, 64], "tokens_per_s": [100.0, 190, 370, 700]})
    >>> row = fit_loglog(df, y="tokens_per_s").iloc[0]
    >>> round(float(row["slope"]), 3), int(row["n"])
    (0.938, 4)
    """
    by_cols = as_columns(by)
    metrics = as_columns(y)
    require_columns(df, [*by_cols, x, *metrics], where="fit_loglog")
    rows = []
    for key, series in iter_series(df, by_cols):
        for metric in metrics:
            xs, ys, dropped = clean_pairs(series, x, metric, where="fit_loglog", key=key)
            rows.append({**key, "metric": metric, **_fit_one(xs, ys, dropped, level, x, metric)})
    out = pd.DataFrame(rows, columns=[*by_cols, *names(LOGLOG_COLUMNS)])
    return out.astype({"n": "int64", "metric": "str", "note": "str"})


def _fit_one(
    xs: np.ndarray, ys: np.ndarray, dropped: int, level: float, x: str, y: str
) -> dict[str, object]:
    """Fit one series; ``xs``, ``ys`` positive and finite, shape (n,)."""
    nan = float("nan")
    n = xs.size
    lx, ly = np.log2(xs), np.log2(ys)
    notes = [f"{dropped} row(s) with missing {x} or {y} dropped"] if dropped else []
    slope = slope_se = intercept = r2 = nan
    ci = (nan, nan)
    if np.unique(lx).size < 2:
        notes.append(f"slope undefined: needs at least 2 distinct {x} values, got {n} point(s)")
    else:
        design = np.column_stack([np.ones(n), lx])
        leverage = _leverage(design)
        if n <= 2 or leverage.max() > 1.0 - _LEVERAGE_TOL:
            coef = np.linalg.lstsq(design, ly, rcond=None)[0]
            intercept, slope = float(coef[0]), float(coef[1])
            r2 = r_squared(ly, design @ coef)
            why = f"n = {n} <= 2" if n <= 2 else "a point has leverage 1"
            notes.append(f"HC3 undefined ({why}): no standard error or interval")
        else:
            # here, not at import, and the one module, not statsmodels.api (which imports all of
            # statsmodels: 1.1 s against 0.7 s on top of pandas)
            from statsmodels.regression.linear_model import OLS

            res = OLS(ly, design).fit(cov_type="HC3", use_t=True)
            intercept, slope = float(res.params[0]), float(res.params[1])
            slope_se = float(res.bse[1])
            low, high = res.conf_int(alpha=1.0 - level)[1]
            ci = (float(low), float(high))
            r2 = r_squared(ly, res.fittedvalues)
    return {
        "n": n,
        "x_min": float(xs.min()) if n else nan,
        "x_max": float(xs.max()) if n else nan,
        "slope": slope,
        "slope_se": slope_se,
        "slope_ci_low": ci[0],
        "slope_ci_high": ci[1],
        "intercept": intercept,
        "r2": r2,
        "pct_change_per_doubling": _pct_per_doubling(slope),
        "pct_change_per_doubling_ci_low": _pct_per_doubling(ci[0]),
        "pct_change_per_doubling_ci_high": _pct_per_doubling(ci[1]),
        "note": "; ".join(notes),
    }


def _leverage(design: np.ndarray) -> np.ndarray:
    """Diagonal of the hat matrix of ``design`` (shape (n, p)), shape (n,)."""
    q, _ = np.linalg.qr(design)
    return np.sum(q * q, axis=1)


def _pct_per_doubling(slope: float) -> float:
    """Percent change of ``y`` when ``x`` doubles under ``y ∝ x**slope``."""
    return 100.0 * (2.0**slope - 1.0)
