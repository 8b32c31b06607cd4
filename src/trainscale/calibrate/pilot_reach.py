"""Where a pilot calibration helps: the evidence by distance, the reach it sets, and where the
shipped interval is wide enough.

A calibration refitted on a user's measured rows (:mod:`trainscale.calibrate.pilot`) moves the
level of the stack it measured. Whether that moved level predicts a configuration better than
the shipped one is measured, not assumed, on the published scaling series
(:func:`trainscale.calibrate.pilot_series.pilot_errors`: each series calibrated on its smallest
GPU count, its base fitted without its source, predicting its larger counts). Per bin of the
distance from the pilots (``log2`` GPU ratio, the bins of
:data:`trainscale.sim.pilot_intervals.BIN_EDGES`), :func:`reach_evidence` gives, every source
weighing the same (a source's rows are averaged first, then the sources):

- ``pilot_mape_pct`` and ``base_mape_pct``: the error of the pilot-calibrated prediction and of
  the shipped level (the base without calibration); ``pilot_helps`` when the first is lower;
- ``shipped_width_covered_pct``: the rows whose observed value lies inside the *shipped*
  interval's width (its log factors for that configuration) placed around the pilot-calibrated
  prediction; ``capped_at_shipped`` when that reaches the interval level (80 %).

**Reach** (:func:`reach`): the pilots' own scale (``d < 0.5``) is always within it (the refit
fits the pilots); from there, bin by bin, while a bin has rows and the pilot level helps in it,
the reach grows to the largest distance measured in that bin. The first bin without rows or where
the shipped level does better ends it. Beyond the reach a configuration is predicted with the
shipped level and the shipped interval and says so in ``extrapolation``
(``beyond_pilot_reach:D>R``; :mod:`trainscale.sim.levels`): there is no evidence that the pilots'
level is worth more than the shipped one that far out.

**Never wider than the shipped interval unless the evidence says so**: in a bin with
``capped_at_shipped`` the pilot interval is clipped to the shipped interval of the configuration
(:meth:`trainscale.sim.intervals.PredictionIntervals.log_factors`); only where the shipped width
placed around pilot-calibrated predictions covered fewer than 80 % of the published rows at that
distance does the pilot interval (its own measured quantiles) stand, wider. A bin without rows
holds no evidence for a wider interval and is capped.

What differs between pilot and target besides the distance was measured on the same series
(:func:`transfer_evidence`, printed by ``trainscale validate --pilots``): a pilot's level carried
to another GPU of the same stack did worse than the shipped level, so another GPU keeps the
shipped level (:mod:`trainscale.sim.levels`); carried to another model or layout on the same
stack and GPU it did better, so it is carried. Another stack has no refitted level to carry.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from trainscale.schema import PILOT_REACH_COLUMNS, names
from trainscale.sim.pilot_intervals import BIN_EDGES
from trainscale.sim.quantile import LEVEL

__all__ = ["REACH_COLUMNS", "capped_bins", "reach", "reach_evidence", "source_weighted_mape"]

#: Columns of :func:`reach_evidence` (units and meanings: ``PILOT_REACH_COLUMNS`` of the data
#: dictionary).
REACH_COLUMNS: tuple[str, ...] = tuple(names(PILOT_REACH_COLUMNS))


def source_weighted_mape(ape: pd.Series, citation: pd.Series) -> float:
    """Mean absolute % error with every source weighing the same (NaN without rows)."""
    if len(ape) == 0:
        return float("nan")
    return float(ape.groupby(citation.to_numpy()).mean().mean())


def _bins(d: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(BIN_EDGES), d, side="right")


def _covered_by_shipped_width(errors: pd.DataFrame) -> pd.Series:
    """Per row, whether the observed value lies in the shipped interval's width around the
    pilot-calibrated prediction."""
    log_error = np.log(
        errors["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        / errors["pilot_predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
    )
    inside = (log_error >= errors["shipped_lower_log_factor"].to_numpy(np.float64)) & (
        log_error <= errors["shipped_upper_log_factor"].to_numpy(np.float64)
    )
    return pd.Series(100.0 * inside, index=errors.index)


def reach_evidence(errors: pd.DataFrame) -> pd.DataFrame:
    """One row per distance bin (:data:`REACH_COLUMNS`) from ``errors``, the rows of
    :func:`trainscale.calibrate.pilot_series.pilot_errors` (module docstring)."""
    bins = _bins(errors["log2_distance"].to_numpy(np.float64))
    covered = _covered_by_shipped_width(errors)
    edges = (0.0, *BIN_EDGES, math.inf)
    out = []
    for k in range(len(BIN_EDGES) + 1):
        part = errors[bins == k]
        cite = part["citation"]
        pilot = source_weighted_mape(part["pilot_ape_pct"], cite)
        base = source_weighted_mape(part["base_ape_pct"], cite)
        width = source_weighted_mape(covered[bins == k], cite)
        out.append({
            "log2_distance_from": edges[k], "log2_distance_to": edges[k + 1],
            "rows": len(part), "sources": int(cite.nunique()),
            "largest_log2_distance": float(part["log2_distance"].max()) if len(part) else np.nan,
            "pilot_mape_pct": pilot, "base_mape_pct": base,
            "weak_scaling_mape_pct": source_weighted_mape(part["weak_scaling_ape_pct"], cite),
            "pilot_helps": bool(len(part) and pilot < base),
            "shipped_width_covered_pct": width,
            "capped_at_shipped": bool(not len(part) or width >= 100.0 * LEVEL),
        })  # fmt: skip
    return pd.DataFrame(out, columns=list(REACH_COLUMNS))


def reach(evidence: pd.DataFrame) -> float:
    """The largest distance (doublings from the pilots) at which the pilot-calibrated level is
    used (module docstring); ``evidence``: :func:`reach_evidence`."""
    out = BIN_EDGES[0]  # the pilots' own scale
    for row in evidence.iloc[1:].itertuples(index=False):
        if not (row.rows and row.pilot_helps):
            break
        out = max(out, float(row.largest_log2_distance))
    return float(f"{out:.6g}")


def capped_bins(evidence: pd.DataFrame) -> tuple[bool, ...]:
    """Per distance bin, whether the pilot interval is clipped to the shipped one."""
    return tuple(bool(v) for v in evidence["capped_at_shipped"])
