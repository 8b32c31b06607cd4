"""Universal Scalability Law (Gunther) fits of throughput against GPU count.

The model is

    X(N) = x1 * N / (1 + sigma * (N - 1) + kappa * N * (N - 1)),

with ``x1 > 0`` the throughput of one GPU without contention, ``0 <= sigma <= 1`` contention
(the serial fraction) and ``kappa >= 0`` coherency (crosstalk that grows with N²). When
``kappa > 0`` throughput peaks at ``N* = sqrt((1 - sigma) / kappa)`` and falls beyond it.

This module gathers the public names, each defined in the module of its step, so that
``from trainscale.fits.usl import ...`` keeps working:

- :mod:`trainscale.fits.usl_law`: the equation (:func:`usl_model`), its gradient and its peak;
- :mod:`trainscale.fits.usl_fit`: :func:`fit_usl` and its result :class:`UslFit` (log
  residuals, Student-t Wald intervals, ``N*`` by the delta method or a parametric bootstrap);
- :mod:`trainscale.fits.usl_table`: :func:`fit_usl_table` (one fit per series of a long table)
  and :func:`usl_curve` (a fit on a grid of GPU counts, with its band).
"""

from __future__ import annotations

from trainscale.fits.usl_fit import UslFit, fit_usl
from trainscale.fits.usl_law import usl_model
from trainscale.fits.usl_table import fit_usl_table, usl_curve

__all__ = ["UslFit", "fit_usl", "fit_usl_table", "usl_curve", "usl_model"]
