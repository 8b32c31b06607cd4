"""The Universal Scalability Law (Gunther): the equation, its gradient and its peak.

The model of whole-job throughput at ``N`` GPUs is

    X(N) = x1 * N / (1 + sigma * (N - 1) + kappa * N * (N - 1)),

with ``x1 > 0`` the throughput of one GPU without contention (the unit of ``X``, e.g. tokens/s),
``0 <= sigma <= 1`` contention (the serial fraction, dimensionless) and ``kappa >= 0`` coherency
(crosstalk that grows with N², dimensionless). When ``kappa > 0`` throughput peaks at
``N* = sqrt((1 - sigma) / kappa)`` GPUs and falls beyond it.

Fits (:mod:`trainscale.fits.usl_fit`) estimate ``theta = (ln x1, sigma, kappa)`` within
:data:`THETA_LOWER` and :data:`THETA_UPPER`; :func:`grad_log_x` is the gradient of ``ln X`` in
``theta`` that their Jacobian, standard errors and delta-method bands use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "THETA_LOWER",
    "THETA_UPPER",
    "grad_log_x",
    "peak_gpu_count",
    "usl_denominator",
    "usl_model",
]

#: Lower bounds of ``theta = (ln x1, sigma, kappa)``.
THETA_LOWER = np.array([-np.inf, 0.0, 0.0])
#: Upper bounds of ``theta = (ln x1, sigma, kappa)``.
THETA_UPPER = np.array([np.inf, 1.0, np.inf])


def usl_model(
    n: np.ndarray | Sequence[float] | float, x1: float, sigma: float, kappa: float
) -> np.ndarray:
    """Evaluate ``X(N) = x1 N / (1 + sigma (N-1) + kappa N (N-1))``.

    Parameters
    ----------
    n : array_like
        GPU counts (≥ 1), any shape.
    x1 : float
        Single-GPU throughput (unit of the result).
    sigma, kappa : float
        Contention and coherency coefficients (dimensionless).

    Returns
    -------
    numpy.ndarray
        Throughput, same shape as ``n`` and unit as ``x1``.
    """
    n = np.asarray(n, dtype=float)
    return x1 * n / usl_denominator(n, sigma, kappa)


def usl_denominator(n: np.ndarray, sigma: float, kappa: float) -> np.ndarray:
    """``1 + sigma (N-1) + kappa N (N-1)`` at GPU counts ``n`` (dimensionless, ≥ 1)."""
    return 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)


def grad_log_x(n: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Gradient of ``ln X(n)`` with respect to ``(ln x1, sigma, kappa)``, shape (len(n), 3)."""
    d = usl_denominator(n, theta[1], theta[2])
    return np.column_stack([np.ones_like(n), -(n - 1.0) / d, -n * (n - 1.0) / d])


def peak_gpu_count(sigma: float, kappa: float) -> float:
    """``N* = sqrt((1 - sigma) / kappa)``, the GPU count of peak throughput; ``inf`` when
    ``kappa <= 0`` (no peak)."""
    if kappa <= 0.0:
        return float("inf")
    return float(np.sqrt((1.0 - sigma) / kappa))
