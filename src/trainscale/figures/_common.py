"""Shared plumbing of the paper's figures: labels, fixed colours, source notes, data selection.

Every figure says where its numbers come from (simulated, published or measured):
:func:`sim_source`, :func:`published_source` and :func:`measured_source` build that sentence from
the rows themselves (calibration id, citation, run id), and :func:`add_source_note` writes it under
the figure. Colours are fixed per model and per GPU (:func:`model_colors`, :func:`gpu_colors`) so a
model has the same colour in every figure. The catalogues that colours and orders come from are
passed in by the caller (the figure's ``render`` gets them from its rule's declared catalogue
files); nothing here loads one.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from trainscale.report.palette import colorblind

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__: list[str] = []

#: Font size (pt) of the source note under each figure.
NOTE_FONTSIZE = 6.5


def _first_slots(slots: Mapping[str, int | None]) -> dict[str, int]:
    """Key → palette position of the entries that give a ``color_slot``; where two give the same
    one (an entry copied and not edited), the first in the file keeps it and the other takes a
    free position, as an entry without a slot does."""
    kept: dict[str, int] = {}
    for key, slot in slots.items():
        if slot is not None and slot not in kept.values():
            kept[key] = slot
    return kept


def _fixed_colors(keys: Iterable[str], slots: dict[str, int], later: Iterable[str] = ()) -> dict:
    """Key → colour: each key of ``slots`` (the catalogue's ``color_slot``) at its palette
    position, the other keys at the remaining positions in name order, then the keys of
    ``later`` in name order (so adding those never moves the colour of another)."""
    palette = colorblind()
    free = [i for i in range(len(palette)) if i not in slots.values()]
    colors = {k: tuple(palette[i]) for k, i in slots.items()}
    others = sorted(set(keys) - set(slots), key=str)
    others += sorted(set(later) - set(slots) - set(others), key=str)
    colors.update({k: tuple(palette[free[i % len(free)]]) for i, k in enumerate(others)})
    return colors


def model_colors(models: Mapping[str, ModelShape]) -> dict:
    """Fixed colour per model key of ``models`` (the model catalogue, ``data/models.yaml``: its
    ``color_slot``), the same in every figure; mixture-of-experts models take the free colours
    after the dense ones."""
    dense = [k for k, m in models.items() if m.moe is None]
    moe = [k for k, m in models.items() if m.moe is not None]
    return _fixed_colors(
        dense, _first_slots({k: m.color_slot for k, m in models.items()}), later=moe
    )


def gpu_colors(hardware: HardwareCatalog) -> dict:
    """Fixed colour per GPU key of ``hardware`` (the GPU catalogue, ``data/hardware.yaml``: its
    ``color_slot``), the same in every figure."""
    return _fixed_colors(
        hardware.gpus, _first_slots({k: g.color_slot for k, g in hardware.gpus.items()})
    )


def plan_label(tp: int, pp: int, sharding: str | None = None) -> str:
    """``tp2×pp1`` (with ``, fsdp`` appended when ``sharding`` is given)."""
    label = f"tp{int(tp)}×pp{int(pp)}"
    return f"{label}, {sharding}" if sharding else label


def _unique(values: pd.Series) -> list[str]:
    return sorted({str(v) for v in values.dropna() if str(v)})


def sim_source(df: pd.DataFrame) -> str:
    """ "Simulated: trainscale <version>, calibration <id>" from the rows' provenance columns
    (``simulator_version``, ``calibration_id``); "Simulated: no rows" without any."""
    if "calibration_id" not in df.columns or not len(df):
        return "Simulated: no rows"
    ids = ", ".join(_unique(df["calibration_id"]))
    versions = ", ".join(_unique(df.get("simulator_version", pd.Series(dtype=str))))
    return f"Simulated: trainscale {versions}, calibration {ids}".replace("trainscale ,", "")


def published_source(citations: Iterable[str]) -> str:
    """ "Published: <citation>; <citation>" (sorted, unique)."""
    unique = sorted({str(c) for c in citations if str(c)})
    return "Published: " + ("; ".join(unique) if unique else "none")


def measured_source(run_ids: Iterable[str]) -> str:
    """ "Measured: runs <id>, <id>" (sorted, unique) or a statement that there are none."""
    unique = sorted({str(r) for r in run_ids if str(r)})
    return "Measured: runs " + ", ".join(unique) if unique else "Measured: no runs in the dataset"


def add_source_note(fig: Figure, *lines: str) -> Figure:
    """Write the data source(s) under the figure, in small grey type, and keep the panels clear.

    Uses the constrained-layout ``rect`` to reserve the strip the note needs.
    """
    width = max(40, int(fig.get_figwidth() * 72 / (NOTE_FONTSIZE * 0.56)))
    wrapped = [textwrap.fill(line, width, subsequent_indent="  ") for line in lines if line]
    text = "\n".join(wrapped)
    height_in = (text.count("\n") + 1) * NOTE_FONTSIZE * 1.3 / 72 + 0.04
    bottom = min(0.4, height_in / fig.get_figheight())
    engine = fig.get_layout_engine()
    if engine is not None and hasattr(engine, "set"):
        engine.set(rect=(0.0, bottom, 1.0, 1.0 - bottom))
    fig.text(0.005, 0.006, text, ha="left", va="bottom", fontsize=NOTE_FONTSIZE, color="0.35")
    return fig


def save_styled(build, stem) -> tuple:
    """Build a figure with ``build()`` under the one theme and save it with ``save_figure``."""
    from trainscale.report.style import save_figure, style_context

    with style_context():
        fig = build()
        try:
            return save_figure(fig, stem)
        finally:
            plt.close(fig)


def new_figure(width: float, height: float, **subplots_kw: object):
    """A constrained-layout figure with a grid of axes: ``(fig, axes)`` as ``plt.subplots``."""
    return plt.subplots(figsize=(width, height), layout="constrained", **subplots_kw)


def subplot_mosaic(width: float, height: float, mosaic: list, **kw: object):
    """A constrained-layout figure from a mosaic: ``(fig, {name: Axes})``."""
    fig = plt.figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplot_mosaic(mosaic, **kw)


def legend_row(ax, handles: list, labels: list, *, ncols: int, title: str | None = None, **kw):
    """Turn ``ax`` (a full-width row of a mosaic) into a legend holder; return the legend."""
    ax.set_axis_off()
    options = {"loc": "center", "ncols": ncols, "borderaxespad": 0.0, "fontsize": 7}
    options.update(kw)
    return ax.legend(handles, labels, title=title, **options)


def recompute_facecolor(rows: pd.DataFrame, color) -> list:
    """Marker face colours: filled without recomputation, white (open) with it."""
    return [color if mode == "none" else "white" for mode in rows["recompute"]]


def plot_series(ax, x, y, rows: pd.DataFrame, color, marker: str = "o", **kw):
    """A line with markers (``marker``, a Matplotlib marker), open where the row uses
    recomputation (see :func:`~trainscale.report.select.fastest_recompute`)."""
    ax.plot(x, y, color=color, **{k: v for k, v in kw.items() if k != "ms"})
    ax.scatter(
        x,
        y,
        s=kw.get("ms", 4.0) ** 2,
        marker=marker,
        facecolors=recompute_facecolor(rows, color),
        edgecolors=[color],
        linewidths=1.0,
        zorder=3,
    )


def plot_band(ax, x, rows: pd.DataFrame, column: str, color, scale: float = 1.0) -> bool:
    """The 80 % prediction interval of ``column`` as a band, from the rows' own
    ``<column>_lo`` and ``<column>_hi`` (the simulated table carries them; nothing is computed
    here); at a single x value, as a bar. Returns whether a band was drawn (a table without the
    columns, or with an empty interval, draws none)."""
    lo, hi = f"{column}_lo", f"{column}_hi"
    if lo not in rows.columns or hi not in rows.columns or rows[[lo, hi]].isna().all().all():
        return False
    low, high = rows[lo].astype(float) * scale, rows[hi].astype(float) * scale
    if len(np.unique(np.asarray(x, dtype=float))) == 1:
        # one x value: a band would have no width, so the interval is a wide translucent bar
        ax.vlines(x, low, high, color=color, alpha=0.25, lw=7, zorder=1)
        return True
    ax.fill_between(x, low, high, color=color, alpha=0.15, lw=0, zorder=1)
    return True


def band_handle():
    """Legend entry explaining the interval bands."""
    from matplotlib.patches import Patch

    return Patch(facecolor="0.3", alpha=0.15, lw=0, label="80 % prediction interval")


def recompute_label(modes: Sequence[str], chosen: bool) -> str:
    """Legend text of open markers for the recomputation ``modes`` the plotted rows use (``none``
    left out), e.g. ``open: selective recomputation``; ``chosen``: the recomputation was picked
    per point as the fastest that fits (:func:`~trainscale.report.select.fastest_recompute`),
    which the text then says."""
    used = [m for m in ("selective", "full") if m in set(modes)]
    words = " or ".join(used) if used else "full"
    return f"open: {words} recomputation" + (" (needed to fit, or faster)" if chosen else "")


#: Legend text of open markers in the paper figures (:func:`recompute_handle`), whose points take
#: full recomputation where it is needed to fit or faster.
RECOMPUTE_LABEL = recompute_label(("none", "full"), chosen=True)


def recompute_handle(label: str = RECOMPUTE_LABEL):
    """Legend entry explaining open markers (``label``; by default the paper figures' text: the
    point's plan recomputes activations in full, because without it the plan does not fit in
    memory or is slower, :func:`~trainscale.report.select.fastest_recompute`)."""
    from matplotlib.lines import Line2D

    return Line2D(
        [],
        [],
        ls="",
        marker="o",
        mfc="white",
        mec="0.3",
        label=label,
    )


def compact_number(value: float) -> str:
    """``0.02``, ``500``, ``2k``, ``50k``, ``3M`` (tick labels of log axes)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


#: Below this ratio of the largest to the smallest plotted value, a log axis is ticked at every
#: integer multiple of each decade (700k, 800k, 900k, 1M) instead of at 1, 2 and 5, which would
#: leave it one label or none.
NARROW_LOG_RATIO = 4.0


def _decades_when_crowded(log_locator: type) -> type:
    """A ``log_locator`` (matplotlib's LogLocator) that falls back to whole decades where it
    would leave fewer than two ticks in view: LogLocator thins a small axis spanning three or
    more decades by a stride that, with subs (1, 2, 5), skips every tick in view."""

    class DecadesWhenCrowded(log_locator):  # type: ignore[misc, valid-type]
        def tick_values(self, vmin: float, vmax: float):  # type: ignore[no-untyped-def]
            ticks = super().tick_values(vmin, vmax)
            low, high = min(vmin, vmax), max(vmin, vmax)
            if ((ticks >= low) & (ticks <= high)).sum() >= 2:
                return ticks
            return log_locator(base=10, numticks=self.numticks).tick_values(vmin, vmax)

    return DecadesWhenCrowded


def readable_log(ax, axis: str = "y") -> None:
    """Log-10 axis with ticks at 1, 2 and 5 per decade, labelled compactly (0.02, 500, 5k), for
    axes that span a few decades; at 1, 2, ..., 9 per decade where the data drawn so far span less
    than :data:`NARROW_LOG_RATIO`."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    low, high = ax.dataLim.intervaly if axis == "y" else ax.dataLim.intervalx
    narrow = np.isfinite(low) and np.isfinite(high) and low > 0 and high < NARROW_LOG_RATIO * low
    subs = tuple(float(k) for k in range(1, 10)) if narrow else (1.0, 2.0, 5.0)
    target.set_major_locator(_decades_when_crowded(LogLocator)(base=10, subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: compact_number(v)))
    target.set_minor_locator(NullLocator())


def log10_decade_limits(values: np.ndarray, pad: float = 0.15) -> tuple[float, float]:
    """Limits of a log axis that hold ``values`` with ``pad`` decades of margin."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return 1.0, 10.0
    return 10 ** (np.log10(values.min()) - pad), 10 ** (np.log10(values.max()) + pad)
