"""Single-panel building blocks shared by the study's figures (each takes ``ax=None``, returns
the Axes)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from trainscale.fits.usl_fit import UslFit
from trainscale.fits.usl_table import usl_curve
from trainscale.report.style import log2_gpu_axis

__all__ = ["plot_usl"]


def plot_usl(
    fit: UslFit,
    n: Sequence[float] | np.ndarray,
    x: Sequence[float] | np.ndarray,
    *,
    ax: Axes | None = None,
    color: str | tuple[float, float, float] | None = None,
    label: str | None = None,
    band: bool = True,
    grid_points: int = 200,
) -> Axes:
    """Throughput points, their USL fit and its confidence band on log2 GPU / log throughput axes.

    Parameters
    ----------
    fit : UslFit
        Fit of ``x`` against ``n`` (:func:`trainscale.fits.fit_usl`).
    n : array_like, shape (m,)
        GPU counts of the points; also the ticks of the log2 GPU axis.
    x : array_like, shape (m,)
        Throughput of the points (unit of the fit, e.g. tokens/s).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default the current Axes (``plt.gca()``).
    color : colour, optional
        Colour of points, curve and band; default the next colour of the Axes' cycle.
    label : str, optional
        Legend label of the points (the curve and band stay unlabelled).
    band : bool, default True
        Draw the fit's pointwise confidence band (:func:`trainscale.fits.usl_curve`).
    grid_points : int, default 200
        Points of the fitted curve, geometrically spaced over the range of ``n``.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on.
    """
    ax = plt.gca() if ax is None else ax
    n_arr = np.asarray(n, dtype=float)
    x_arr = np.asarray(x, dtype=float)
    points = ax.scatter(n_arr, x_arr, color=color, label=label, zorder=3)
    color = points.get_facecolor()[0] if color is None else color
    curve = usl_curve(fit, np.geomspace(n_arr.min(), n_arr.max(), grid_points))
    ax.plot(curve["n"], curve["x"], color=color, zorder=2)
    if band:
        ax.fill_between(
            curve["n"], curve["x_ci_low"], curve["x_ci_high"], color=color, alpha=0.2, lw=0
        )
    ax.set_yscale("log")
    log2_gpu_axis(ax, n_arr)
    return ax
