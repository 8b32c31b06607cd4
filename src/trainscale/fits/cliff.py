"""Cliffs: where a smooth scaling fit misses a series that falls off a step.

A log-log slope (a constant % per doubling) and the Universal Scalability Law both describe
throughput that bends smoothly. A series that is flat and then falls at one step (the batch per
GPU running out, a collective that stops hiding) is not that shape: the fit's per-doubling
summary and ``n_star`` then describe neither the flat part nor the fall.

:func:`find_cliff` flags such a series from the fit's own residuals: the fit misses some point's
tokens/s per GPU by more than :data:`CLIFF_MISS` (10 %), and some step loses more than that
fraction of tokens/s per GPU per doubling; the cliff is the step that loses most.
:func:`loglog_per_gpu` and :func:`usl_per_gpu`
give the two fits' per-GPU values at the series' own counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainscale.fits.usl_fit import fit_usl
from trainscale.fits.usl_law import usl_model

__all__ = ["CLIFF_MISS", "Cliff", "find_cliff", "loglog_per_gpu", "usl_per_gpu"]

#: A fit that misses a point's tokens/s per GPU by more than this fraction does not describe the
#: series' shape.
CLIFF_MISS = 0.10


@dataclass(frozen=True, slots=True)
class Cliff:
    """The step a smooth fit smooths over."""

    n_from: float
    """GPU count before the step."""
    n_to: float
    """GPU count after the step."""
    pct_per_doubling: float
    """Change of tokens/s per GPU over the step, % per doubling of the GPU count."""
    worst_miss_pct: float
    """The fit's largest miss of a point's tokens/s per GPU, % of the fitted value."""

    def describe(self, fit: str) -> str:
        """One sentence for a fit's note."""
        return (
            f"cliff: tokens/s per GPU changes {self.pct_per_doubling:+.1f} % per doubling from "
            f"{self.n_from:,.0f} to {self.n_to:,.0f} GPUs and the {fit} misses a point by "
            f"{self.worst_miss_pct:+.1f} %: it smooths over the step (see the knee)"
        )


def loglog_per_gpu(n: np.ndarray, per_gpu: np.ndarray) -> np.ndarray:
    """The least-squares line of ``log2(per_gpu)`` on ``log2(n)``, evaluated at ``n``."""
    slope, intercept = np.polyfit(np.log2(n), np.log2(per_gpu), 1)
    return 2.0 ** (intercept + slope * np.log2(n))


def usl_per_gpu(n: np.ndarray, tokens_per_s: np.ndarray) -> np.ndarray:
    """The USL fit of whole-job tokens/s (:func:`trainscale.fits.fit_usl`), per GPU at ``n``;
    NaN where it cannot be fitted."""
    fit = fit_usl(n, tokens_per_s)
    if not np.isfinite(fit.x1):
        return np.full(len(n), np.nan)
    return usl_model(n, fit.x1, fit.sigma, fit.kappa) / n


def find_cliff(n: np.ndarray, per_gpu: np.ndarray, fitted: np.ndarray) -> Cliff | None:
    """The cliff of a series (module docstring), or None: ``n`` GPU counts (increasing),
    ``per_gpu`` observed tokens/s per GPU and ``fitted`` a fit's values at ``n``."""
    n, per_gpu, fitted = (np.asarray(a, dtype=float) for a in (n, per_gpu, fitted))
    if len(n) < 3 or not np.isfinite(fitted).all():
        return None
    miss = per_gpu / fitted - 1.0
    worst = int(np.argmax(np.abs(miss)))
    if abs(miss[worst]) <= CLIFF_MISS:
        return None
    doublings = np.log2(n[1:] / n[:-1])
    per_doubling = (per_gpu[1:] / per_gpu[:-1]) ** (1.0 / doublings) - 1.0
    step = int(np.argmin(per_doubling))
    if per_doubling[step] > -CLIFF_MISS:
        return None
    return Cliff(n[step], n[step + 1], 100.0 * per_doubling[step], 100.0 * miss[worst])
