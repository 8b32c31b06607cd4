"""Rendering helpers behind the study's figures and tables.

- :mod:`trainscale.report.style`: the one theme (:func:`apply_style`), GPU-count axes
  (:func:`log2_gpu_axis`) and byte-reproducible saving (:func:`save_figure`);
- :mod:`trainscale.report.tables`: CSV + Markdown + booktabs LaTeX (:func:`write_table`);
- :mod:`trainscale.report.plots`: single-panel building blocks (``ax=None`` → Axes).
"""

from __future__ import annotations

from trainscale.report.plots import plot_usl
from trainscale.report.style import (
    apply_style,
    category_colors,
    log2_gpu_axis,
    save_figure,
    style_context,
    theme_rc,
)
from trainscale.report.tables import write_table

__all__ = [
    "apply_style",
    "category_colors",
    "log2_gpu_axis",
    "plot_usl",
    "save_figure",
    "style_context",
    "theme_rc",
    "write_table",
]
