"""The colours and the base theme of every figure: seaborn 0.13.2's ``colorblind`` palette,
``ticks`` style and ``paper`` context, written out.

The values are seaborn's (``seaborn.palettes.SEABORN_PALETTES["colorblind"]``,
``seaborn.axes_style("ticks")`` and ``seaborn.plotting_context("paper")`` of seaborn 0.13.2,
https://seaborn.pydata.org/tutorial/aesthetics.html and /color_palettes.html), copied so that a
figure does not import seaborn: importing it costs about 0.6 s (it imports scipy.stats), paid
again by every figure job of the workflow. ``tests/report/test_palette.py`` checks them against
seaborn itself. One key is left out: the style's ``image.cmap`` (``rocket``, a colour map seaborn
registers when imported), which :data:`trainscale.report.style.RC` sets to ``viridis`` anyway.
"""

from __future__ import annotations

from itertools import cycle, islice
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.colors import to_rgb

__all__ = ["COLORBLIND", "PAPER_CONTEXT", "TICKS_STYLE", "colorblind", "colormap_palette"]

#: seaborn's ``colorblind`` palette: ten hues distinguishable with the common colour-vision
#: deficiencies (Okabe-Ito-like), in seaborn's order.
COLORBLIND: tuple[str, ...] = (
    "#0173B2", "#DE8F05", "#029E73", "#D55E00", "#CC78BC",
    "#CA9161", "#FBAFE4", "#949494", "#ECE133", "#56B4E9",
)  # fmt: skip

#: ``seaborn.axes_style("ticks")`` less ``image.cmap`` (module docstring); colours as grey levels.
TICKS_STYLE: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.labelcolor": ".15",
    "xtick.direction": "out",
    "ytick.direction": "out",
    "xtick.color": ".15",
    "ytick.color": ".15",
    "axes.axisbelow": True,
    "grid.linestyle": "-",
    "text.color": ".15",
    "font.family": ["sans-serif"],
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans",
                        "sans-serif"],
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "xtick.top": False,
    "ytick.right": False,
    "axes.grid": False,
    "axes.facecolor": "white",
    "axes.edgecolor": ".15",
    "grid.color": ".8",
    "axes.spines.left": True,
    "axes.spines.bottom": True,
    "axes.spines.right": True,
    "axes.spines.top": True,
    "xtick.bottom": True,
    "ytick.left": True,
}  # fmt: skip

#: ``seaborn.plotting_context("paper")``: seaborn's ``notebook`` sizes scaled by 0.8 (points).
PAPER_CONTEXT: dict[str, Any] = {
    "font.size": 12 * 0.8,
    "axes.labelsize": 12 * 0.8,
    "axes.titlesize": 12 * 0.8,
    "xtick.labelsize": 11 * 0.8,
    "ytick.labelsize": 11 * 0.8,
    "legend.fontsize": 11 * 0.8,
    "legend.title_fontsize": 12 * 0.8,
    "axes.linewidth": 1.25 * 0.8,
    "grid.linewidth": 1 * 0.8,
    "lines.linewidth": 1.5 * 0.8,
    "lines.markersize": 6 * 0.8,
    "patch.linewidth": 1 * 0.8,
    "xtick.major.width": 1.25 * 0.8,
    "ytick.major.width": 1.25 * 0.8,
    "xtick.minor.width": 1 * 0.8,
    "ytick.minor.width": 1 * 0.8,
    "xtick.major.size": 6 * 0.8,
    "ytick.major.size": 6 * 0.8,
    "xtick.minor.size": 4 * 0.8,
    "ytick.minor.size": 4 * 0.8,
}


def colorblind(n: int | None = None) -> list[tuple[float, float, float]]:
    """``n`` colours of :data:`COLORBLIND` as RGB tuples in [0, 1], cycling after ten (all ten
    where ``n`` is None): ``seaborn.color_palette("colorblind", n)``."""
    hues = COLORBLIND if n is None else islice(cycle(COLORBLIND), n)
    return [to_rgb(hue) for hue in hues]


def colormap_palette(name: str, n: int) -> list[tuple[float, float, float]]:
    """``n`` colours spread over the Matplotlib colour map ``name``, its two ends left out:
    ``seaborn.color_palette(name, n)`` for a continuous map such as ``viridis``."""
    bins = np.linspace(0, 1, int(n) + 2)[1:-1]
    return [to_rgb(tuple(rgb)) for rgb in mpl.colormaps[name](bins)[:, :3]]
