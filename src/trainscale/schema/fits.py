"""The tables the fits return: log-log, Universal Scalability Law and marginal returns."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

LOGLOG_COLUMNS: tuple[Column, ...] = table("LOGLOG_COLUMNS")
"""Columns of :func:`trainscale.fits.loglog.fit_loglog` after the series (``by``) columns: the power
law ``log2(y) = intercept + slope * log2(x)`` of each series and metric."""

USL_COLUMNS: tuple[Column, ...] = table("USL_COLUMNS")
"""Columns of :func:`trainscale.fits.usl_table.fit_usl_table` after the series (``by``) columns: the
Universal Scalability Law ``X(N) = x1 N / (1 + sigma (N - 1) + kappa N (N - 1))`` of each series;
the fields of :class:`trainscale.fits.usl_fit.UslFit` but its covariance."""

MARGINAL_COLUMNS: tuple[Column, ...] = table("MARGINAL_COLUMNS")
"""Columns of :func:`trainscale.fits.marginal.marginal_returns` after the series (``by``) columns:
one row per pair of consecutive GPU counts."""

USL_MARGINAL_COLUMNS: tuple[Column, ...] = table("USL_MARGINAL_COLUMNS")
"""Columns of :func:`trainscale.fits.marginal.usl_marginal`: a USL fit's derivative dX/dN on a grid
of GPU counts, with a delta-method band."""
