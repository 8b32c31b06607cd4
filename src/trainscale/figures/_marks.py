"""Marks several figures draw on their panels: where the paper setup's micro-batch changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

__all__ = ["mark_micro_batch_switch", "micro_batch_switch"]


def micro_batch_switch(data: pd.DataFrame) -> int | None:
    """The first GPU count at which the paper's micro-batch rule drops the micro-batch (2 → 1
    where the local batch becomes 1), or None if it never changes."""
    if data.empty or "micro_batch" not in data.columns:
        return None
    per_count = data.groupby("num_gpus")["micro_batch"].max().sort_index()
    smaller = per_count[per_count < per_count.cummax()]
    return int(smaller.index[0]) if len(smaller) else None


def mark_micro_batch_switch(
    ax: Mapping[str, object],
    data: pd.DataFrame,
    panels: Iterable[str],
    named: str,
    *,
    height: float = 0.97,
    gap_points: float = 3.0,
) -> int | None:
    """A thin line in each of ``panels`` where the micro-batch changes, named once (in panel
    ``named``, ``gap_points`` left of the line, its top at ``height`` of the axes); returns the
    GPU count of the switch, or None (nothing drawn)."""
    switch = micro_batch_switch(data)
    if switch is None:
        return None
    before = int(data[data["num_gpus"] < switch]["micro_batch"].max())
    after = int(data[data["num_gpus"] == switch]["micro_batch"].max())
    for key in panels:
        ax[key].axvline(switch, color="0.6", ls=":", lw=0.9, zorder=1)
    ax[named].annotate(
        f"micro-batch {before} → {after}\n(local batch {after})",
        xy=(switch, height), xycoords=("data", "axes fraction"), xytext=(-gap_points, 0),
        textcoords="offset points", ha="right", va="top", fontsize=6.5, color="0.3",
    )  # fmt: skip
    return switch
