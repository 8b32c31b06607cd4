"""What the paper's figures and tables share, below both: their registry, their row selection
and the rendering helpers.

- :mod:`trainscale.report.registry`: the registry entries (``Output``, ``Input``) and the
  loading of their inputs;
- :mod:`trainscale.report.select`: row selection (the paper's micro-batch rule, the fastest
  recompute mode, model and GPU orders, column checks);
- :mod:`trainscale.report.best_plans`: the fastest plan that fits per model and GPU count;
- :mod:`trainscale.report.style`: the one theme (:func:`apply_style`), GPU-count axes
  (:func:`log2_gpu_axis`) and byte-reproducible saving (:func:`save_figure`);
- :mod:`trainscale.report.palette`: the theme's colours, style and context (seaborn's, written
  out);
- :mod:`trainscale.report.tables`: CSV + Markdown + booktabs LaTeX (:func:`write_table`);
- :mod:`trainscale.report.plots`: single-panel building blocks (``ax=None`` → Axes).

The rendering helpers below are imported on first use (module ``__getattr__``): the workflow
reads the registries when it parses (``rules/common.smk``), and that must not wait for
Matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

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

#: Exported name → the module that defines it.
_HOMES = {
    "apply_style": "trainscale.report.style",
    "category_colors": "trainscale.report.style",
    "log2_gpu_axis": "trainscale.report.style",
    "plot_usl": "trainscale.report.plots",
    "save_figure": "trainscale.report.style",
    "style_context": "trainscale.report.style",
    "theme_rc": "trainscale.report.style",
    "write_table": "trainscale.report.tables",
}


def __getattr__(name: str) -> Any:
    """``trainscale.report.<name>`` for the names of :data:`__all__`, from their modules."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
