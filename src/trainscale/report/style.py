"""The one look of every trainscale figure, GPU-count axes, and byte-reproducible saving.

All figures use one theme, seaborn's ``ticks`` style, ``paper`` context and colour-blind-safe
``colorblind`` palette (written out in :mod:`trainscale.report.palette`), plus a fixed rc:
DejaVu Sans (shipped with matplotlib, so text renders the same on every machine), fixed font
sizes, TrueType fonts in PDF (``pdf.fonttype`` 42) and a fixed ``svg.hashsalt``.
:func:`save_figure` strips dates and tool versions from the metadata and snaps the constrained
layout's Axes positions to a fixed grid (:class:`SnappedConstrainedLayout`), so the same figure
gives the same bytes on every run, in every process.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
from matplotlib.transforms import Bbox

from trainscale.errors import TrainscaleError
from trainscale.io.atomic import atomic_paths, with_suffix
from trainscale.report.palette import PAPER_CONTEXT, TICKS_STYLE, colorblind

__all__ = [
    "FIGURE_FORMATS",
    "LAYOUT_DECIMALS",
    "PNG_DPI",
    "RC",
    "SnappedConstrainedLayout",
    "apply_style",
    "category_colors",
    "log2_gpu_axis",
    "save_figure",
    "style_context",
    "theme_rc",
]

#: Resolution of the PNG files (dots per inch).
PNG_DPI = 200

#: Formats :func:`save_figure` writes, in order.
FIGURE_FORMATS: tuple[str, ...] = ("pdf", "png", "svg")

#: The fixed rc layered over seaborn's ``ticks`` style and ``paper`` context (font sizes in pt,
#: figure size in inches: one column of a two-column paper).
RC: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "legend.fontsize": 8.0,
    "legend.title_fontsize": 8.0,
    "figure.titlesize": 10.0,
    "figure.figsize": (3.5, 2.6),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
    "savefig.dpi": PNG_DPI,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": ".88",
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "lines.markersize": 4.0,
    "legend.frameon": False,
    "image.cmap": "viridis",
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "trainscale",
}

# Metadata keys whose default values hold a date or a tool version; None removes them.
_METADATA: dict[str, dict[str, None]] = {
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
    "svg": {"Date": None, "Creator": None},
    "png": {"Software": None},
}
_BACKENDS = {"pdf": "pdf", "svg": "svg", "png": "agg"}
# Settings read when a file is written (not when the figure is drawn): enforced by save_figure.
_SAVE_RC = ("pdf.fonttype", "ps.fonttype", "svg.fonttype", "svg.hashsalt")


def theme_rc() -> dict[str, Any]:
    """The full rc of the theme: seaborn ``ticks`` + ``paper`` + palette, then :data:`RC`."""
    rc: dict[str, Any] = {}
    rc.update(TICKS_STYLE)
    rc.update(PAPER_CONTEXT)
    rc["axes.prop_cycle"] = cycler(color=colorblind())
    rc.update(RC)
    return rc


def apply_style() -> None:
    """Make the theme matplotlib's global default (``rcParams``) for this process.

    Call it once at the start of a figure script; use :func:`style_context` to apply the theme
    to a block only.
    """
    mpl.rcParams.update(theme_rc())


def style_context() -> AbstractContextManager[None]:
    """A context manager that applies the theme inside a ``with`` block and restores after."""
    return mpl.rc_context(theme_rc())


def category_colors(levels: Iterable[Hashable]) -> dict[Hashable, tuple[float, float, float]]:
    """Fixed colours for category levels (e.g. GPU types), the same in every figure.

    Levels are sorted (as strings) and assigned palette colours in order, cycling after 10.

    Parameters
    ----------
    levels : iterable of hashable
        Category values; duplicates are ignored.

    Returns
    -------
    dict
        Level → RGB tuple (floats in [0, 1]).
    """
    colors = colorblind()
    ordered = sorted(set(levels), key=str)
    return {level: tuple(colors[i % len(colors)]) for i, level in enumerate(ordered)}


def log2_gpu_axis(
    ax: Axes,
    counts: Sequence[float] | np.ndarray,
    *,
    axis: Literal["x", "y"] = "x",
    pad: float = 0.25,
) -> Axes:
    """Put GPU counts on a base-2 log axis labelled with the counts themselves (8, 16, …, 2048).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to change.
    counts : array_like
        GPU counts to tick (positive; duplicates ignored).
    axis : {"x", "y"}, default "x"
        Which axis holds the GPU counts.
    pad : float, default 0.25
        Margin beyond the smallest and largest count, in doublings.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, for chaining.
    """
    ticks = np.unique(np.asarray(counts, dtype=float))
    if ticks.size == 0 or not np.all(np.isfinite(ticks) & (ticks > 0)):
        raise TrainscaleError(f"log2_gpu_axis: counts must be positive numbers, got {counts!r}")
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(_count_label))
    target.set_minor_locator(NullLocator())
    limits = (ticks[0] / 2.0**pad, ticks[-1] * 2.0**pad)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(*limits)
    return ax


def _count_label(value: float, _pos: int | None = None) -> str:
    """Tick label of a GPU count: ``2048``, or ``1.5`` for a fractional value."""
    return str(round(value)) if float(value).is_integer() else f"{value:g}"


#: Decimals of the figure fraction that :class:`SnappedConstrainedLayout` keeps: 10^-6 of a
#: 7-inch figure is 0.0005 pt, a thousandth of a PNG pixel at 200 dpi.
LAYOUT_DECIMALS = 6


class SnappedConstrainedLayout(ConstrainedLayoutEngine):
    """Constrained layout whose Axes positions are rounded to :data:`LAYOUT_DECIMALS` decimals of
    the figure, so that they do not depend on the process that drew them.

    Matplotlib's constrained layout solves its constraints with kiwisolver, which orders the
    terms of every constraint by the memory address of their variables (a ``std::map`` keyed by
    pointer; the layout makes new variables at every draw). Pivot and summation order, and so
    the last bits of every Axes position, depend on where the allocator put those variables:
    the same figure drawn twice, in one process or two, lands a few units in the last place
    apart. PNG and PDF round that away; SVG does not: its clip-path ids hash the clip
    rectangle's full-precision floats, and a coordinate near a rounding boundary prints
    differently at its sixth decimal. Rounding the solved positions (their corners, so that
    aligned edges stay aligned) leaves every later number a function of the figure alone.
    """

    def execute(self, fig: Figure) -> Any:
        result = super().execute(fig)
        for ax in fig.get_axes():
            if not ax.get_in_layout() or ax.get_axes_locator() is not None:
                continue
            corners = np.round(ax.get_position(original=True).get_points(), LAYOUT_DECIMALS)
            ax.set_position(Bbox(corners + 0.0))  # + 0.0: no -0.0
            ax.set_in_layout(True)  # set_position takes an Axes out of the layout; keep it in
        return result


def _snapped_layout(fig: Figure) -> None:
    """Replace ``fig``'s constrained layout by a :class:`SnappedConstrainedLayout` with the
    same settings (pads, spaces, rect, compress)."""
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine) and not isinstance(
        engine, SnappedConstrainedLayout
    ):
        snapped = SnappedConstrainedLayout(compress=getattr(engine, "_compress", False))
        snapped.set(**engine.get())
        fig.set_layout_engine(snapped)


def save_figure(
    fig: Figure,
    stem: str | os.PathLike[str],
    *,
    formats: Sequence[str] = FIGURE_FORMATS,
) -> tuple[Path, ...]:
    """Write ``fig`` as ``stem.pdf``, ``stem.png`` (200 dpi) and ``stem.svg``, reproducibly.

    Dates and tool versions are removed from the metadata, PNGs are rendered with Agg, a
    constrained layout is snapped to a fixed grid (:class:`SnappedConstrainedLayout`), and the
    theme's save-time settings (``pdf.fonttype`` 42, ``svg.fonttype``, the fixed
    ``svg.hashsalt``) apply whatever the caller's rcParams, so the same figure gives the same
    bytes on every run, in any process. All files are first written to temporary files in the
    target folder and renamed only when every format succeeded: a failure leaves the previous
    outputs (or none).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Figure to save.
    stem : str or os.PathLike
        Output path without suffix, e.g. ``reports/figures/throughput_per_gpu`` (Snakemake's
        ``multiext(stem, ".pdf", ".png", ".svg")``); missing folders are created.
    formats : sequence of {"pdf", "png", "svg"}, default all three
        Formats to write.

    Returns
    -------
    tuple of pathlib.Path
        Written paths, in ``formats`` order.
    """
    unknown = [f for f in formats if f not in _BACKENDS]
    if unknown:
        raise TrainscaleError(f"save_figure: unknown format(s) {unknown}; use {FIGURE_FORMATS}")
    targets = [with_suffix(stem, f".{fmt}") for fmt in formats]
    _snapped_layout(fig)
    with (
        mpl.rc_context({key: RC[key] for key in _SAVE_RC}),
        atomic_paths(targets) as temps,
    ):
        for fmt, temp in zip(formats, temps, strict=True):
            fig.savefig(
                temp,
                format=fmt,
                backend=_BACKENDS[fmt],
                dpi=PNG_DPI,
                metadata=_METADATA[fmt],
            )
    return tuple(targets)
