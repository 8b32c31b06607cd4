"""What a prediction's 80 % interval rests on, said beside it when that is little.

The interval of :mod:`trainscale.sim.intervals` widens silently where the calibration knows
little: a framework whose rows come from too few sources takes the pooled quantile times
``pooled_widening``, a GPU without throughput rows is widened by ``gpu_without_data``. A planner
reading ``128 .. 268 tokens/s per GPU`` should also read *why* it is that wide and how well such
intervals did on sources the fit never saw. :func:`interval_caution` returns that sentence, built
only from the calibration file's ``intervals`` block (its quantiles, coverage facts and
``source_out_coverage``), or ``None`` where the interval rests on enough data.

A caution is given when the framework's quantile is ``pooled``
(fewer than ``min_rows`` rows or ``min_sources`` sources), when its source-out median interval
width exceeds :data:`WIDE_PCT`, or when the GPU has no throughput row in the calibration data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from trainscale.sim.intervals import PredictionIntervals

__all__ = ["WIDE_PCT", "interval_caution", "interval_cautions"]

#: A framework whose intervals were, source out, wider than this (median, % of the prediction)
#: gets a caution even with enough rows.
WIDE_PCT = 100.0


def interval_caution(intervals: PredictionIntervals | None, framework: str, gpu: str) -> str | None:
    """One sentence on what the interval of a ``framework`` prediction on ``gpu`` rests on, or
    ``None`` when its framework has its own quantile, narrow source-out intervals and the GPU has
    calibration rows. ``intervals``: :attr:`trainscale.sim.calibration.Calibration.intervals`
    (``None``: no interval, no caution). A pilot-calibrated file (its intervals come from the
    user's own pilots) gets none either."""
    if intervals is None or intervals.pilot is not None:
        return None
    parts = []
    quantile = {fw: (kind, rows, sources) for fw, _, kind, rows, sources in intervals.quantiles}
    kind, rows, sources = quantile.get(framework, ("pooled", 0, 0))
    if kind == "pooled":
        parts.append(
            f"framework {framework} has {rows} calibration row(s) from {sources} source(s), too "
            "few for its own error quantile: the interval is the pooled one, widened"
        )
    held_out = ((intervals.coverage or {}).get("per_framework") or {}).get(framework)
    if held_out:
        width, covered = float(held_out["median_width_pct"]), float(held_out["coverage_pct"])
        if kind == "pooled" or width > WIDE_PCT:
            parts.append(
                f"on its sources left out of the fit, {framework}'s intervals were "
                f"{width:.0f} % wide (median) and covered {covered:.0f} % of {held_out['rows']} "
                "row(s)"
            )
    if gpu not in intervals.facts.gpus_with_data:
        parts.append(f"GPU {gpu} has no throughput row in the calibration data (widened)")
    if not parts:
        return None
    return "; ".join(parts) + " (docs/simulator/intervals.md)"


def interval_cautions(
    intervals: PredictionIntervals | None, rows: pd.DataFrame
) -> Iterable[tuple[str, str, int, str]]:
    """For each distinct (``framework``, ``gpu``) of the predicted ``rows`` with a caution: the
    framework, the GPU, how many rows, and :func:`interval_caution`'s sentence; sorted by
    framework then GPU."""
    if rows.empty or not {"framework", "gpu"} <= set(rows.columns):
        return []
    counts = rows.groupby(["framework", "gpu"], sort=True).size()
    out = []
    for (framework, gpu), n in counts.items():
        text = interval_caution(intervals, str(framework), str(gpu))
        if text is not None:
            out.append((str(framework), str(gpu), int(n), text))
    return out
