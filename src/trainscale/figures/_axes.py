"""Axis and legend scaffolding the paper's figures share: a doubling x axis (GPU counts,
degrees, batches, lengths) and the legend keys that follow the series (the interval band, the
open markers of recomputed points)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from matplotlib.axes import Axes

from trainscale.figures._common import band_handle, recompute_handle
from trainscale.report.style import log2_gpu_axis

__all__ = ["doubling_axis", "series_keys"]


def doubling_axis(
    ax: Axes, values: Iterable[float], label: str | None = "GPUs (count)", *, rotation: float = 90
) -> None:
    """A base-2 log x axis ticked at ``values`` (:func:`~trainscale.report.style.log2_gpu_axis`),
    its tick labels turned ``rotation`` degrees, labelled ``label`` (None: the label is left
    as it is)."""
    log2_gpu_axis(ax, values)
    ax.tick_params(axis="x", labelrotation=rotation)
    if label is not None:
        ax.set_xlabel(label)


def series_keys(data: pd.DataFrame, *, banded: bool, band_first: bool = False) -> list:
    """The legend entries after the series': the open-marker key where a plotted row of
    ``data`` recomputes activations, and the band key where an interval band was drawn
    (``banded``), in that order (``band_first``: the band first)."""
    keys = []
    if (data["recompute"] != "none").any():
        keys.append(recompute_handle())
    if banded:
        keys.insert(0 if band_first else len(keys), band_handle())
    return keys
