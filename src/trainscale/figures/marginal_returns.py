"""Figure ``marginal_returns``: throughput bought by each added GPU and each added kilowatt.

For each model of the ``fsdp_scaleout`` study (Llama-2 7B and 70B, FSDP, H100): points are the
secants between consecutive GPU counts, ``ΔX/ΔN`` (tokens/s per added GPU) and ``ΔX/ΔP``
(tokens/s per added kW of GPU power), from :func:`trainscale.fits.marginal_returns`; the curve
is the derivative ``dX/dN`` of the Universal Scalability Law fitted to the whole-job throughput
(:func:`trainscale.fits.fit_usl`, :func:`trainscale.fits.usl_marginal`) with its 95 % band, cut
at zero and drawn only up to the first cliff (a step whose added GPUs each bought less than half
of what a GPU gave before it, :func:`trainscale.fits.knee.marginal_cliffs`), which is shaded and
labelled instead of smoothed through; the
per-kW curve divides it by the power one more GPU adds (the series' power per GPU, interpolated
in log GPU count). A dotted line marks what the first GPUs bought, so the gap is the diminishing
return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import (
    add_source_note,
    legend_row,
    model_colors,
    sim_source,
    subplot_mosaic,
)
from trainscale.figures._render import styled_render
from trainscale.fits import fit_usl, marginal_returns, usl_marginal
from trainscale.fits.knee import marginal_cliffs
from trainscale.names import model_label
from trainscale.report.select import fastest_recompute, model_order, paper_micro_batch, require

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = ["plot", "render"]

_COLUMNS = ("model", "num_gpus", "recompute", "fits_memory", "tokens_per_s", "power_w_per_gpu")
_PANELS = (
    (
        "gpu",
        "added_tokens_per_s_per_gpu",
        "marginal_tokens_per_s_per_gpu",
        "Marginal throughput\n(tokens/s per added GPU)",
    ),
    (
        "kw",
        "added_tokens_per_s_per_kw",
        "marginal_tokens_per_s_per_kw",
        "Marginal throughput\n(tokens/s per added kW)",
    ),
)


def plot(sim: pd.DataFrame, *, models: Mapping[str, ModelShape]) -> Figure:
    """Rows: models; columns: per added GPU and per added kW; against GPU count."""
    require(sim, _COLUMNS, where="marginal_returns")
    data = fastest_recompute(paper_micro_batch(sim), ["model"])
    order = model_order(data["model"].unique(), models)
    colors = model_colors(models)
    names = [[f"{m}|{key}" for key, *_ in _PANELS] for m in order] or [["empty|gpu", "empty|kw"]]
    fig, ax = subplot_mosaic(
        7.0,
        2.5 * max(len(order), 1) + 0.6,
        [*names, ["legend"] * 2],
        height_ratios=[1.0] * len(names) + [0.16],
    )
    secants = marginal_returns(data, by="model", usl=False) if len(data) else pd.DataFrame()
    for model in order:
        rows = data[data["model"] == model].sort_values("num_gpus")
        n, x = rows["num_gpus"].to_numpy(float), rows["tokens_per_s"].to_numpy(float)
        fit = fit_usl(n, x)
        cliffs = marginal_cliffs(n, x)
        # the USL's dX/dN is drawn up to the first cliff, not through it
        end = cliffs[0][0] if cliffs else n.max()
        grid = np.geomspace(n.min(), end, 200)
        watts = np.interp(np.log2(grid), np.log2(n), rows["power_w_per_gpu"].to_numpy(float))
        curve = usl_marginal(fit, grid, watts_per_added_gpu=watts)
        pts = secants[secants["model"] == model]
        mid = np.sqrt(pts["n_from"] * pts["n_to"])
        color = colors[model]
        for key, point_col, curve_col, label in _PANELS:
            a = ax[f"{model}|{key}"]
            _panel(a, curve, curve_col, pts, mid, point_col, color, fit, cliffs, n)
            a.set_ylabel(label)
            a.set_title(
                f"{model_label(model, models)}, per added {'GPU' if key == 'gpu' else 'kW'}",
                fontsize=8,
            )
    # each swatch shows every model's colour, as the panels draw them
    shown = [colors[m] for m in order] or ["0.3"]
    handles = [
        tuple(Line2D([], [], ls="", marker="o", color=c) for c in shown),
        tuple(Line2D([], [], color=c, lw=1.2) for c in shown),
        tuple(Patch(color=c, alpha=0.2, lw=0) for c in shown),
        Line2D([], [], color="0.5", ls=":"),
        Patch(color=_CLIFF, alpha=0.15, lw=0),
    ]
    labels = [
        "between consecutive GPU counts (data)",
        "USL fit: dX/dN (up to a cliff)",
        "95 % band of the fit (delta method, cut at 0)",
        "first step's value",
        "cliff: each added GPU bought < half a GPU's worth",
    ]
    legend_row(
        ax["legend"], handles, labels, ncols=2, fontsize=6.5,
        handler_map={tuple: HandlerTuple(ndivide=None, pad=0.0)},
    )  # fmt: skip
    return add_source_note(
        fig,
        sim_source(sim) + " — whole-job throughput X and GPU power of the fsdp_scaleout study "
        "(H100, FSDP, seq 4,096, global batch 2,048; faster of no/full recomputation); "
        "points at the geometric middle of each GPU-count step.",
    )


_CLIFF = "#c0392b"


def _panel(a, curve, curve_col, pts, mid, point_col, color, fit, cliffs, n) -> None:
    """One panel: the USL curve and band (up to the first cliff), the secants, the cliffs
    shaded, the first step's level, the x axis and the fit's box."""
    if np.isfinite(fit.x1):
        a.plot(curve["n"], curve[curve_col], color=color, lw=1.2)
        a.fill_between(
            curve["n"], np.maximum(curve[f"{curve_col}_ci_low"], 0.0),
            curve[f"{curve_col}_ci_high"], color=color, alpha=0.2, lw=0,
        )  # fmt: skip
    a.scatter(mid, pts[point_col], color=color, s=18, zorder=3)
    for n_from, n_to, share in cliffs:
        _mark_cliff(a, n_from, n_to, share)
    if len(pts):
        a.axhline(pts[point_col].iloc[0], color="0.5", ls=":", lw=0.9)
    a.axhline(0, color="0.3", lw=0.6)
    doubling_axis(a, n)
    star = f"N* = {fit.n_star:,.0f}" if np.isfinite(fit.n_star) else "no peak (κ = 0)"
    # the fit behind both panels of the model, in the empty lower left of each
    a.text(
        0.03, 0.05, f"USL fit: σ = {fit.sigma:.3g}, κ = {fit.kappa:.2g}\n{star}",
        transform=a.transAxes, ha="left", va="bottom", fontsize=6.5, color="0.25",
        bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.8", "lw": 0.5},
    )  # fmt: skip


def _mark_cliff(a, n_from: float, n_to: float, share: float) -> None:
    """Shade a cliff step and say what one added GPU bought over it."""
    a.axvspan(n_from, n_to, color=_CLIFF, alpha=0.15, lw=0, zorder=0)
    a.text(
        np.sqrt(n_from * n_to), 0.5, f"cliff:\n{100 * share:.0f} %\nof a\nGPU's\nworth",
        transform=a.get_xaxis_transform(), ha="center", va="center", fontsize=6, color=_CLIFF,
    )  # fmt: skip


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``; ``models`` is the model catalogue
#: (``data/models.yaml``: each model's colour and the order by size).
render = styled_render(plot)
