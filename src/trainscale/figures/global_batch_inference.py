"""Figure ``global_batch_inference``: which global batch is consistent with the paper's drop?

The paper kept its global batch fixed while adding GPUs but did not print it. The 128 → 2,048
drop of tokens/s per GPU depends on it: a larger batch leaves each GPU more work per step to
hide the (fixed) communication behind. The figure draws the simulated drop against the assumed
global batch (Llama-2 7B, FSDP, H100), one line per sequence length, with the paper's 37.22 % and
a ±5-point band; the trainscale paper setup (2,048 sequences of 4,096 tokens) is marked.

Input: the ``global_batch_inference`` study (``results/sim/global_batch_inference.parquet``).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trainscale.figures._axes import doubling_axis
from trainscale.figures._common import add_source_note, legend_row, sim_source, subplot_mosaic
from trainscale.figures._render import styled_render
from trainscale.paper.values import (
    PAPER_CLAIM_FROM,
    PAPER_CLAIM_TO,
    PAPER_GLOBAL_BATCH,
    PAPER_MICRO_BATCH,
    PAPER_SEQ_LEN,
    PAPER_THROUGHPUT_DROP_PCT,
)
from trainscale.report.palette import colorblind
from trainscale.report.select import paper_micro_batch, require
from trainscale.study.report import within_usable_memory

__all__ = [
    "TOLERANCE_POINTS",
    "drop_by_batch",
    "missing_batches",
    "plot",
    "render",
]

#: Tolerance of the throughput-drop claim (percentage points), as in the claims table.
TOLERANCE_POINTS = 5.0
_COLUMNS = ("seq_len", "global_batch", "num_gpus", "tokens_per_s_per_gpu", "fits_memory")


def drop_by_batch(sim: pd.DataFrame) -> pd.DataFrame:
    """Per-GPU throughput drop (%) from 128 to 2,048 GPUs per sequence length and global batch.

    Returns
    -------
    pandas.DataFrame
        Columns ``seq_len`` (tokens), ``global_batch`` (sequences), ``global_batch_tokens``,
        ``drop_pct`` (%); only batches simulated (and fitting in memory) at both counts.
    """
    require(sim, _COLUMNS, where="global_batch_inference")
    fits = paper_micro_batch(sim[within_usable_memory(sim)])
    wide = fits.pivot_table(
        index=["seq_len", "global_batch"],
        columns="num_gpus",
        values="tokens_per_s_per_gpu",
        aggfunc="max",
    )
    if PAPER_CLAIM_FROM not in wide.columns or PAPER_CLAIM_TO not in wide.columns:
        return pd.DataFrame(columns=["seq_len", "global_batch", "global_batch_tokens", "drop_pct"])
    drop = 100.0 * (1.0 - wide[PAPER_CLAIM_TO] / wide[PAPER_CLAIM_FROM])
    out = drop.dropna().rename("drop_pct").reset_index()
    out.insert(2, "global_batch_tokens", out["seq_len"] * out["global_batch"])
    return out


def missing_batches(sim: pd.DataFrame, drops: pd.DataFrame) -> list[str]:
    """Why each swept (sequence length, global batch) without a drop has none: a GPU count
    whose rows all miss the paper's micro-batch rule (the local batch does not split into
    micro-batches of 2), or one with no row that fits in memory."""
    shown = set(zip(drops["seq_len"], drops["global_batch"], strict=True))
    fits = sim[within_usable_memory(sim)]
    kept = paper_micro_batch(fits)
    notes = []
    for (seq, batch), _ in fits.groupby(["seq_len", "global_batch"], sort=True):
        if (seq, batch) in shown:
            continue
        reasons = []
        for n in (PAPER_CLAIM_FROM, PAPER_CLAIM_TO):
            here = fits[(fits["seq_len"] == seq) & (fits["global_batch"] == batch)]
            here = here[here["num_gpus"] == n]
            if here.empty:
                reasons.append(f"nothing fits in memory at {n:,} GPUs")
            elif kept[
                (kept["seq_len"] == seq) & (kept["global_batch"] == batch) & (kept["num_gpus"] == n)
            ].empty:
                local = int(here["global_batch"].iloc[0] // here["dp"].iloc[0])
                reasons.append(
                    f"at {n:,} GPUs the local batch of {local} sequences does not split into "
                    f"micro-batches of {PAPER_MICRO_BATCH} (the paper setup's rule)"
                )
        if reasons:
            notes.append(f"{int(batch):,} sequences of {int(seq):,} tokens: " + "; ".join(reasons))
    return notes


def plot(sim: pd.DataFrame) -> Figure:
    """Drop (%) against the assumed global batch (sequences), one line per sequence length."""
    drops = drop_by_batch(sim)
    fig, ax = subplot_mosaic(6.0, 3.6, [["main"], ["legend"]], height_ratios=[1, 0.12])
    a = ax["main"]
    study = PAPER_THROUGHPUT_DROP_PCT
    a.axhspan(study - TOLERANCE_POINTS, study + TOLERANCE_POINTS, color="0.85", lw=0)
    a.axhline(study, color="black", lw=1.0)
    lengths = sorted(drops["seq_len"].unique())
    colors = dict(zip(lengths, colorblind(len(lengths)), strict=True))
    handles = []
    for seq in lengths:
        rows = drops[drops["seq_len"] == seq].sort_values("global_batch")
        a.plot(rows["global_batch"], rows["drop_pct"], marker="o", color=colors[seq])
        handles.append(
            Line2D(
                [],
                [],
                color=colors[seq],
                marker="o",
                label=f"simulated, sequences of {seq:,} tokens",
            )
        )
    setup = drops[
        (drops["seq_len"] == PAPER_SEQ_LEN) & (drops["global_batch"] == PAPER_GLOBAL_BATCH)
    ]
    if not setup.empty:
        a.plot(
            PAPER_GLOBAL_BATCH,
            setup["drop_pct"].iloc[0],
            marker="*",
            ms=12,
            color="black",
            ls="",
            zorder=5,
        )
        handles.append(
            Line2D(
                [],
                [],
                color="black",
                marker="*",
                ms=10,
                ls="",
                label=f"trainscale paper setup ({PAPER_GLOBAL_BATCH:,} × "
                f"{PAPER_SEQ_LEN:,}): {setup['drop_pct'].iloc[0]:.2f} %",
            )
        )
    handles += [
        Line2D([], [], color="black", label=f"paper: {study:.2f} % drop"),
        Patch(color="0.85", label=f"paper ± {TOLERANCE_POINTS:g} points"),
    ]
    batches = sorted(drops["global_batch"].unique()) or [PAPER_GLOBAL_BATCH]
    doubling_axis(a, batches, "Assumed global batch (sequences per step)", rotation=45)
    a.set_ylabel(f"Drop of tokens/s per GPU,\n{PAPER_CLAIM_FROM} → {PAPER_CLAIM_TO:,} GPUs (%)")
    a.set_ylim(bottom=0)
    legend_row(ax["legend"], handles, [h.get_label() for h in handles], ncols=2, fontsize=6.5)
    missing = missing_batches(sim, drops) if "dp" in sim.columns else []
    return add_source_note(
        fig,
        sim_source(sim) + " — Llama-2 7B, FSDP, H100 (DGX H100), no recomputation, "
        "micro-batch 2 per GPU (1 where the local batch is 1). A batch below "
        f"{PAPER_CLAIM_TO:,} sequences cannot give each of {PAPER_CLAIM_TO:,} data-parallel GPUs "
        "a sequence.",
        *(["No point for " + ". ".join(missing) + "."] if missing else []),
    )


#: Draw :func:`plot` and save ``stem.{pdf,png,svg}``.
render = styled_render(plot)
