"""Fitting the Universal Scalability Law to throughput against GPU count (:func:`fit_usl`).

The model is that of :mod:`trainscale.fits.usl_law`. Fits minimise *relative* (log) residuals
``ln X_obs - ln X(N)`` with :func:`scipy.optimize.least_squares` under the parameter bounds, so
the many-GPU points (whose throughput is largest) do not dominate. Parameters are estimated
internally as ``theta = (ln x1, sigma, kappa)``; standard errors come from ``s² (JᵀJ)⁻¹`` with
``s²`` the residual variance on ``n - 3`` degrees of freedom, and intervals are Student-t Wald
intervals (on the log scale for ``x1``) clipped to the parameter bounds (``N*``'s at 1 GPU).
R² is that of the per-GPU throughput ``ln(X / N)`` (see :attr:`UslFit.r2`). The result is a
:class:`UslFit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Literal

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.fits._series import clean_pairs, r_squared, t_quantile
from trainscale.fits.usl_law import (
    THETA_LOWER,
    THETA_UPPER,
    grad_log_x,
    peak_gpu_count,
    usl_denominator,
    usl_model,
)

__all__ = ["NStarCi", "UslFit", "fit_clean_points", "fit_usl"]

#: How the interval of ``N*`` is made (see :func:`fit_usl`).
NStarCi = Literal["delta", "bootstrap"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UslFit:
    """Result of one USL fit; throughput values are in the unit of the fitted ``x``."""

    x1: float
    """Throughput of one GPU without contention (unit of ``x``, e.g. tokens/s)."""
    x1_se: float
    """Standard error of ``x1`` (delta method from ``ln x1``)."""
    x1_ci_low: float
    """Lower end of the interval of ``x1`` (Wald on ``ln x1``, so always positive)."""
    x1_ci_high: float
    """Upper end of the interval of ``x1``."""
    sigma: float
    """Contention coefficient, dimensionless, in [0, 1]."""
    sigma_se: float
    """Standard error of ``sigma``."""
    sigma_ci_low: float
    """Lower end of the interval of ``sigma``, clipped at 0."""
    sigma_ci_high: float
    """Upper end of the interval of ``sigma``, clipped at 1."""
    kappa: float
    """Coherency coefficient, dimensionless, >= 0."""
    kappa_se: float
    """Standard error of ``kappa``."""
    kappa_ci_low: float
    """Lower end of the interval of ``kappa``, clipped at 0."""
    kappa_ci_high: float
    """Upper end of the interval of ``kappa``."""
    n_star: float
    """GPU count of peak throughput ``sqrt((1 - sigma) / kappa)``; ``inf`` when ``kappa = 0``."""
    n_star_ci_low: float
    """Lower end of the interval of ``n_star`` (GPUs)."""
    n_star_ci_high: float
    """Upper end of the interval of ``n_star`` (GPUs); ``inf`` when the data allow no peak."""
    n_star_ci_method: str
    """How the ``n_star`` interval was made: ``"delta"`` or ``"bootstrap"``."""
    r2: float
    """R² of ``ln(X / N)``, the per-GPU throughput, which the fit explains: residuals are those
    of the fitted ``ln X``, the total variance that of ``ln(X / N)`` about its mean. On ``ln X``
    itself every series scores about 1 (whole-job throughput grows with N whatever the fit);
    this compares the fit with flat per-GPU throughput, as the log-log fits' R² does."""
    residual_sd_log: float
    """Residual standard deviation of ``ln X`` (≈ relative error of one point)."""
    n: int
    """Points used in the fit."""
    dof: int
    """Residual degrees of freedom, ``n - 3``."""
    level: float
    """Confidence level of all intervals."""
    converged: bool
    """Whether the optimiser reported convergence (False also when nothing could be fitted)."""
    note: str
    """Why values are NaN, which bounds are active, what was dropped; ``""`` when nothing."""
    cov_theta: tuple[tuple[float, float, float], ...]
    """3 × 3 covariance of ``(ln x1, sigma, kappa)``; NaN when undetermined."""

    @property
    def theta(self) -> np.ndarray:
        """Internal parameters ``(ln x1, sigma, kappa)``, shape (3,)."""
        return np.array([np.log(self.x1), self.sigma, self.kappa])

    @property
    def cov(self) -> np.ndarray:
        """Covariance of :attr:`theta`, shape (3, 3)."""
        return np.array(self.cov_theta, dtype=float)

    def predict(self, n: np.ndarray | Sequence[float] | float) -> np.ndarray:
        """Fitted throughput at GPU counts ``n`` (unit of ``x``), same shape as ``n``."""
        return usl_model(n, self.x1, self.sigma, self.kappa)

    def to_dict(self) -> dict[str, object]:
        """The scalar fields as a dict (without :attr:`cov_theta`), in field order."""
        out = asdict(self)
        del out["cov_theta"]
        return out


def fit_usl(
    n: np.ndarray | Sequence[float],
    x: np.ndarray | Sequence[float],
    *,
    level: float = 0.95,
    n_star_ci: NStarCi = "delta",
    rng: np.random.Generator | None = None,
    n_boot: int = 500,
) -> UslFit:
    """Fit the USL to throughput ``x`` measured at GPU counts ``n``.

    Parameters
    ----------
    n : array_like, shape (m,)
        GPU counts (≥ 1); replicates at the same count are separate points.
    x : array_like, shape (m,)
        Throughput at each count (> 0), e.g. tokens/s of the whole job. Pairs with a NaN are
        dropped (and noted).
    level : float, default 0.95
        Confidence level of the intervals.
    n_star_ci : {"delta", "bootstrap"}, default "delta"
        Interval of ``N*``. ``"delta"``: delta method on ``ln N*``, except that the upper end is
        ``inf`` whenever ``kappa``'s interval reaches 0 (the data do not exclude "no peak");
        when ``kappa`` is estimated at 0, ``N* = inf`` and the lower end is
        ``sqrt((1 - sigma) / kappa_ci_high)``. ``"bootstrap"``: parametric bootstrap of
        ``n_boot`` refits to ``X̂(N)·exp(ε)``, ``ε ~ Normal(0, residual_sd_log²)``, percentile
        interval (refits with ``kappa = 0`` give ``N* = inf``); needs ``rng``. Either lower
        end is clipped at 1 GPU.
    rng : numpy.random.Generator, optional
        Random generator for the bootstrap, e.g. ``numpy.random.default_rng(seed)``.
    n_boot : int, default 500
        Bootstrap refits.

    Returns
    -------
    UslFit
        Estimates, standard errors, intervals, ``N*``, R², ``converged`` and ``note``. With fewer
        than 3 distinct GPU counts nothing is fitted (all NaN, ``converged = False``); with
        exactly 3 points the fit is exact and errors/intervals are NaN.

    Raises
    ------
    TrainscaleError
        Shapes differ, a count or throughput is non-positive or infinite, or
        ``n_star_ci="bootstrap"`` without ``rng``.

    Examples
    --------
    >>> import numpy as np
    >>> gpus = np.array([8, 16, 32, 64, 128, 256])
    >>> fit = fit_usl(gpus, usl_model(gpus, 1000.0, 0.05, 1e-4))
    >>> round(fit.sigma, 4), round(fit.kappa, 6), round(fit.n_star, 1)
    (0.05, 0.0001, 97.5)
    """
    if n_star_ci not in ("delta", "bootstrap"):
        raise TrainscaleError(
            f"fit_usl: n_star_ci must be 'delta' or 'bootstrap', got {n_star_ci!r}"
        )
    if n_star_ci == "bootstrap" and rng is None:
        raise TrainscaleError(
            "fit_usl: n_star_ci='bootstrap' needs rng=numpy.random.default_rng(seed)"
        )
    n_arr = np.asarray(n, dtype=float).ravel()
    x_arr = np.asarray(x, dtype=float).ravel()
    if n_arr.shape != x_arr.shape:
        raise TrainscaleError(f"fit_usl: n and x differ in length ({n_arr.size} vs {x_arr.size})")
    frame = pd.DataFrame({"n": n_arr, "x": x_arr})
    ns, xs, dropped = clean_pairs(frame, "n", "x", where="fit_usl", key={})
    if (ns < 1).any():
        raise TrainscaleError(f"fit_usl: GPU counts must be >= 1, got {ns[ns < 1][:5].tolist()}")
    notes = [f"{dropped} point(s) with missing values dropped"] if dropped else []
    return fit_clean_points(
        ns, xs, level=level, n_star_ci=n_star_ci, rng=rng, n_boot=n_boot, notes=notes
    )


def fit_clean_points(
    ns: np.ndarray,
    xs: np.ndarray,
    *,
    level: float,
    n_star_ci: NStarCi,
    rng: np.random.Generator | None,
    n_boot: int,
    notes: list[str],
) -> UslFit:
    """:func:`fit_usl` on points already checked: GPU counts ``ns`` ≥ 1, throughput ``xs`` > 0
    and finite, no NaN (as :func:`trainscale.fits._series.clean_pairs` returns them); ``notes``
    (what the caller dropped) is extended with the fit's own notes and joined into ``note``."""
    nan = float("nan")
    m = ns.size
    if np.unique(ns).size < 3:
        notes.append(
            f"USL undefined: needs at least 3 distinct GPU counts, got {np.unique(ns).size}"
        )
        return _undetermined(m, level, n_star_ci, notes)
    theta, converged = _least_squares(ns, np.log(xs))
    ly = np.log(xs)
    resid = ly - np.log(usl_model(ns, np.exp(theta[0]), theta[1], theta[2]))
    dof = m - 3
    tq = t_quantile(level, dof)
    if dof < 1:
        notes.append("3 points for 3 parameters: exact fit, no standard errors or intervals")
        cov = np.full((3, 3), nan)
        s = nan
    else:
        s = float(np.sqrt(np.sum(resid**2) / dof))
        jac = grad_log_x(ns, theta)
        try:
            cov = s**2 * np.linalg.inv(jac.T @ jac)
        except np.linalg.LinAlgError:
            notes.append("singular Jacobian: parameters not identifiable from these counts")
            cov = np.full((3, 3), nan)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    for i, name in ((1, "sigma"), (2, "kappa")):
        if theta[i] <= THETA_LOWER[i]:
            notes.append(f"{name} at its bound 0")
        elif theta[i] >= THETA_UPPER[i]:
            notes.append(f"{name} at its bound 1")
    x1 = float(np.exp(theta[0]))
    sigma, kappa = float(theta[1]), float(theta[2])
    # NaN standard errors (exact fit) propagate: np.clip keeps NaN, unlike max/min.
    kappa_ci = (float(np.clip(kappa - tq * se[2], 0.0, None)), float(kappa + tq * se[2]))
    n_star = peak_gpu_count(sigma, kappa)
    if n_star_ci == "bootstrap":
        n_star_ci_vals = _bootstrap_n_star(ns, theta, s, level, rng, n_boot, notes)
    else:
        n_star_ci_vals = _delta_n_star(sigma, kappa, cov, tq, kappa_ci)
    return UslFit(
        x1=x1,
        x1_se=x1 * float(se[0]),
        x1_ci_low=float(np.exp(theta[0] - tq * se[0])),
        x1_ci_high=float(np.exp(theta[0] + tq * se[0])),
        sigma=sigma,
        sigma_se=float(se[1]),
        sigma_ci_low=float(np.clip(sigma - tq * se[1], 0.0, 1.0)),
        sigma_ci_high=float(np.clip(sigma + tq * se[1], 0.0, 1.0)),
        kappa=kappa,
        kappa_se=float(se[2]),
        kappa_ci_low=kappa_ci[0],
        kappa_ci_high=kappa_ci[1],
        n_star=n_star,
        n_star_ci_low=n_star_ci_vals[0],
        n_star_ci_high=n_star_ci_vals[1],
        n_star_ci_method=n_star_ci,
        r2=r_squared(ly - np.log(ns), ly - resid - np.log(ns)),
        residual_sd_log=s,
        n=m,
        dof=dof,
        level=level,
        converged=converged,
        note="; ".join(notes),
        cov_theta=tuple(tuple(float(v) for v in row) for row in cov),
    )


def _undetermined(m: int, level: float, method: str, notes: list[str]) -> UslFit:
    nan = float("nan")
    values = {f.name: nan for f in fields(UslFit)}
    values.update(
        n=m,
        dof=m - 3,
        level=level,
        n_star_ci_method=method,
        converged=False,
        note="; ".join(notes),
        cov_theta=tuple((nan, nan, nan) for _ in range(3)),
    )
    return UslFit(**values)


def _least_squares(
    ns: np.ndarray, ly: np.ndarray, starts: Sequence[np.ndarray] | None = None
) -> tuple[np.ndarray, bool]:
    """Minimise ``sum (ly - ln X(ns))²`` over ``theta = (ln x1, sigma, kappa)``.

    Starts from each of ``starts`` (default: :func:`_starts`, from the data) and keeps the
    lowest cost; returns ``(theta, converged)``.
    """

    def residuals(theta: np.ndarray) -> np.ndarray:
        return ly - theta[0] - np.log(ns) + np.log(usl_denominator(ns, theta[1], theta[2]))

    def jacobian(theta: np.ndarray) -> np.ndarray:
        return -grad_log_x(ns, theta)

    from scipy import optimize  # here, not at import: figures that draw no fit skip it

    best = None
    for start in _starts(ns, ly) if starts is None else starts:
        res = optimize.least_squares(
            residuals,
            start,
            jac=jacobian,
            bounds=(THETA_LOWER, THETA_UPPER),
            method="trf",
            x_scale="jac",
            ftol=1e-12,
            xtol=1e-12,
            gtol=1e-12,
            max_nfev=2000,
        )
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None  # _starts yields at least one start
    # trf keeps iterates strictly inside the bounds; snap the active ones onto them.
    theta = np.where(
        best.active_mask < 0, THETA_LOWER, np.where(best.active_mask > 0, THETA_UPPER, best.x)
    )
    return theta, bool(best.success and np.isfinite(best.cost))


def _starts(ns: np.ndarray, ly: np.ndarray) -> list[np.ndarray]:
    """Starting points: ``x1 ≈ X(N_min)/N_min`` with (sigma, kappa) from a linearised NNLS fit,
    and the same ``x1`` with no contention."""
    n_min = ns.min()
    ln_x1 = float(np.mean(ly[ns == n_min]) - np.log(n_min))
    # N x1 / X - 1 = sigma (N - 1) + kappa N (N - 1): linear in (sigma, kappa) once x1 is fixed.
    target = ns * np.exp(ln_x1 - ly) - 1.0
    design = np.column_stack([ns - 1.0, ns * (ns - 1.0)])
    weight = 1.0 / (1.0 + np.abs(target))  # relative scale, like the log residuals
    from scipy import optimize

    coef, _ = optimize.nnls(design * weight[:, None], target * weight)
    linear = np.array([ln_x1, min(coef[0], 1.0), coef[1]])
    return [linear, np.array([ln_x1, 0.0, 0.0]), np.array([ln_x1, 0.1, 0.0])]


def _delta_n_star(
    sigma: float, kappa: float, cov: np.ndarray, tq: float, kappa_ci: tuple[float, float]
) -> tuple[float, float]:
    """Delta-method interval of N* on the log scale (see :func:`fit_usl`); the lower end is
    clipped at 1 GPU, the smallest count a peak can be at."""
    nan = float("nan")
    if not np.isfinite(tq) or not np.all(np.isfinite(cov)):
        return nan, nan
    if kappa <= 0.0:
        low = peak_gpu_count(sigma, kappa_ci[1]) if kappa_ci[1] > 0 else nan
        return _at_least_one(low), float("inf")
    if sigma >= 1.0:
        return nan, nan
    n_star = peak_gpu_count(sigma, kappa)
    grad = np.array([0.0, -0.5 / (1.0 - sigma), -0.5 / kappa])  # d ln N* / d theta
    se_log = float(np.sqrt(max(grad @ cov @ grad, 0.0)))
    high = float("inf") if kappa_ci[0] <= 0.0 else n_star * float(np.exp(tq * se_log))
    return _at_least_one(n_star * float(np.exp(-tq * se_log))), high


def _at_least_one(n: float) -> float:
    """``n`` clipped at 1 GPU (NaN stays NaN)."""
    return float(np.clip(n, 1.0, None))


def _bootstrap_n_star(
    ns: np.ndarray,
    theta: np.ndarray,
    s: float,
    level: float,
    rng: np.random.Generator | None,
    n_boot: int,
    notes: list[str],
) -> tuple[float, float]:
    """Parametric-bootstrap percentile interval of N* (see :func:`fit_usl`)."""
    nan = float("nan")
    if rng is None or not np.isfinite(s):
        return nan, nan
    mean_ly = np.log(usl_model(ns, np.exp(theta[0]), theta[1], theta[2]))
    draws = []
    failed = 0
    # Refits start at the estimate and at the no-contention corner, to find kappa = 0 optima.
    start = [theta, np.array([theta[0], theta[1], 0.0])]
    for _ in range(n_boot):
        theta_b, ok = _least_squares(ns, mean_ly + rng.normal(0.0, s, ns.size), start)
        if ok:
            draws.append(peak_gpu_count(theta_b[1], theta_b[2]))
        else:
            failed += 1
    if failed:
        notes.append(f"{failed} of {n_boot} bootstrap refits did not converge and were dropped")
    if not draws:
        return nan, nan
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(np.array(draws), [tail, 1.0 - tail], method="inverted_cdf")
    return _at_least_one(float(low)), _at_least_one(float(high))
