"""80 % intervals of a pilot-calibrated prediction, as a function of the distance from the pilots.

A calibration refitted on a user's measured rows (:mod:`trainscale.calibrate.pilot`) predicts the
GPU counts it was measured at well and larger ones less well. Its interval comes from how wrong
pilot-calibrated predictions actually were on published data
(:mod:`trainscale.calibrate.pilot_series`: every published scaling series calibrated on its
smallest GPU count, with a base fitted without the series' source, predicting its larger counts):

- **Distance** of a configuration from the pilots: ``d = |log2(num_gpus / ref)|``, ``ref`` the
  largest pilot GPU count at or below ``num_gpus`` (the smallest pilot count when every pilot
  is larger). Pilots at several GPU counts therefore shorten the distance, and narrow the
  interval, of everything between and near them.
- **Bins** of ``d`` with edges :data:`BIN_EDGES` (``d < 0.5``: at the pilots' scale; then
  about 2x, 4x, 8x, and 16x or more). In each bin the 10 % and 90 % quantiles of the log error
  ``log(observed / predicted)`` of the published rows in it, every source weighing the same
  (as in the fit). A bin with fewer than :data:`MIN_ROWS` rows takes the rows of its nearest
  bins until it has that many.
- **Monotone in distance**: the lower factor never rises and the upper never falls from one bin
  to the next (an interval cannot narrow further from the pilots), and every interval holds the
  prediction (lower <= 0 <= upper).
- **Absolute scale**: the errors are divided by the growth factor ``exp(beta · x)`` of
  :mod:`trainscale.sim.interval_scale` (``x`` the doublings of the *target* GPU count above one
  node, ``beta`` fitted on the same errors) before the quantiles are taken, and the factors are
  multiplied by it again per configuration (normalised split conformal, as the held-out
  intervals): at one distance, a target at 64 GPUs gets a narrower interval than one at 4,096.
- **Beyond the data**: past the largest distance measured, both factors grow by
  :data:`trainscale.sim.quantile.PER_DOUBLING` per further doubling (the a-priori rule the
  shipped intervals use for scale).

What the published pilots covered: one GPU count per series (a series' smallest). Pilots at
several counts are scored with the same table, by their shorter distance; no published series
was calibrated on several counts, so that case is not measured separately (``pilots_covered``
in the stored block says so).

:class:`PilotIntervals` is the ``pilot`` part of a calibration file's ``intervals`` block;
:meth:`PilotIntervals.log_factors` is vectorised (a searchsorted and a gather per call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainscale.sim.interval_scale import growth_factor
from trainscale.sim.quantile import LEVEL, PER_DOUBLING, weighted_quantile

__all__ = [
    "BIN_EDGES",
    "MIN_ROWS",
    "PilotIntervals",
    "bins_as_dicts",
    "bins_from_dicts",
    "capped_from_dicts",
    "distance",
    "fit_pilot_quantiles",
    "growth_as_dict",
    "growth_from_dict",
    "reach_as_dict",
    "reach_from_dict",
    "with_shipped",
]

BIN_EDGES = (0.5, 1.5, 2.5, 3.5)
MIN_ROWS = 20
_TAIL = (1.0 - LEVEL) / 2.0


def distance(num_gpus: np.ndarray, pilot_gpus: np.ndarray) -> np.ndarray:
    """``|log2(num_gpus / ref)|`` per configuration (module docstring); ``pilot_gpus`` sorted."""
    gpus = np.asarray(num_gpus, np.float64)
    pilots = np.asarray(pilot_gpus, np.float64)
    index = np.maximum(np.searchsorted(pilots, gpus, side="right") - 1, 0)
    return np.abs(np.log2(gpus / pilots[index]))


def _bins(d: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(BIN_EDGES), d, side="right")


def fit_pilot_quantiles(
    d: np.ndarray, log_error: np.ndarray, source: np.ndarray
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...], float]:
    """Per bin of :data:`BIN_EDGES`: the lower and upper log factors (10 % and 90 % quantiles of
    ``log_error`` = ``log(observed / predicted)``, monotone, holding 0), the rows of the bin
    itself, and the largest distance measured. Arrays of one row per published row; ``source``
    its citation (every source weighs the same)."""
    d = np.asarray(d, np.float64)
    log_error = np.asarray(log_error, np.float64)
    source = np.asarray(source).astype(str)
    if len(d) == 0:
        raise ValueError("fit_pilot_quantiles: no rows")
    bins = _bins(d)
    count = len(BIN_EDGES) + 1
    lower, upper = [], []
    for k in range(count):
        take = [k]
        reach = 1
        while (np.isin(bins, take).sum() < MIN_ROWS) and len(take) < count:
            take += [j for j in (k - reach, k + reach) if 0 <= j < count]
            reach += 1
        rows = np.isin(bins, take)
        _, inverse, counts = np.unique(source[rows], return_inverse=True, return_counts=True)
        weights = 1.0 / counts[inverse]
        lower.append(min(weighted_quantile(log_error[rows], weights, _TAIL), 0.0))
        upper.append(max(weighted_quantile(log_error[rows], weights, 1.0 - _TAIL), 0.0))
    lower_m = np.minimum.accumulate(lower)
    upper_m = np.maximum.accumulate(upper)
    own = tuple(int((bins == k).sum()) for k in range(count))
    return (
        tuple(float(f"{v:.6g}") for v in lower_m),
        tuple(float(f"{v:.6g}") for v in upper_m),
        own,
        float(f"{float(d.max()):.6g}"),
    )


@dataclass(frozen=True, slots=True)
class PilotIntervals:
    """The ``pilot`` block of an ``intervals`` block: the quantile table and the pilots' GPUs."""

    pilot_gpus: tuple[int, ...]
    """The GPU counts the calibration was measured at, sorted, distinct."""
    lower: tuple[float, ...]
    """Per bin of :data:`BIN_EDGES`, the lower log factor of tokens/s per GPU (<= 0)."""
    upper: tuple[float, ...]
    """Per bin, the upper log factor (>= 0)."""
    rows: tuple[int, ...]
    """Published rows per bin the factors were measured on."""
    max_distance: float
    """The largest distance (log2 GPU ratio) measured; beyond it both factors widen."""
    pilots_covered: str = "one GPU count per published series"
    coverage: dict[str, Any] | None = field(default=None, compare=False)
    """Source-out coverage as measured, for the record."""
    measured_levels: tuple[tuple[str, str], ...] = ()
    """The (framework, GPU) pairs the measurements ran: the levels they pinned. A configuration
    of another pair keeps the shipped level (:attr:`shipped_offsets`) and the shipped conformal
    interval, and says so in ``extrapolation`` (:mod:`trainscale.sim.simulate`). Empty: every
    configuration takes the calibration as it is (files written before levels were recorded)."""
    shipped_offsets: tuple[tuple[str, str, float], ...] = ()
    """(framework, efficiency base, log offset) of the base calibration: the shipped level."""
    reach: float = math.inf
    """The largest distance (log2 GPU ratio) at which the pilot-calibrated level beat the shipped
    one on the published series (:mod:`trainscale.calibrate.pilot_reach`); beyond it a
    configuration keeps the shipped level and interval, flagged ``beyond_pilot_reach``."""
    capped: tuple[bool, ...] = ()
    """Per bin, whether the interval is clipped to the shipped one there (the shipped width was
    enough on the published series at that distance) or, where not, widened to at least the
    shipped one (:func:`with_shipped`); empty (files written before): neither."""
    growth_rate: float = 0.0
    """``beta`` of the absolute-scale factor ``exp(beta · x)``
    (:mod:`trainscale.sim.interval_scale`) the bins' factors are in units of; 0 (files written
    before): no scale factor."""

    def beyond_reach(self, num_gpus: np.ndarray) -> np.ndarray:
        """Whether each configuration lies beyond :attr:`reach` from the pilots."""
        return distance(num_gpus, np.asarray(self.pilot_gpus)) > self.reach

    def capped_at(self, num_gpus: np.ndarray) -> np.ndarray:
        """Whether each configuration's interval is clipped to the shipped one."""
        if not self.capped:
            return np.zeros(len(np.asarray(num_gpus)), dtype=bool)
        return np.asarray(self.capped)[_bins(distance(num_gpus, np.asarray(self.pilot_gpus)))]

    def measured(
        self,
        framework: np.ndarray,
        gpu_index: np.ndarray,
        gpu_keys: tuple[str, ...],
        framework_keys: tuple[str, ...],
    ) -> np.ndarray:
        """Whether each configuration's (framework, GPU) pair is one the measurements ran (all
        True without recorded levels); ``framework`` indexes ``framework_keys`` (the framework
        list of the catalogue the configurations were built with), ``gpu_index``
        ``gpu_keys``."""
        if not self.measured_levels:
            return np.ones(len(framework), dtype=bool)
        pairs = set(self.measured_levels)
        table = np.array([[(fw, g) in pairs for g in gpu_keys] for fw in framework_keys])
        return table[np.asarray(framework), np.asarray(gpu_index)]

    def log_factors(self, num_gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper log factors of tokens/s per GPU per configuration (vectorised):
        the interval is ``predicted * exp(lower) .. predicted * exp(upper)``."""
        return self.log_factors_at(distance(num_gpus, np.asarray(self.pilot_gpus)), num_gpus)

    def log_factors_at(self, d: np.ndarray, num_gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`log_factors` at distances ``d`` from the pilots of targets of ``num_gpus``."""
        d = np.asarray(d, np.float64)
        bins = _bins(d)
        widen = 1.0 + PER_DOUBLING * np.maximum(d - self.max_distance, 0.0)
        widen = widen * growth_factor(num_gpus, self.growth_rate)
        return np.asarray(self.lower)[bins] * widen, np.asarray(self.upper)[bins] * widen

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": "errors of pilot-calibrated predictions on published scaling series "
            "(trainscale.calibrate.pilot_series, each series' base fitted without its source), "
            "10 % and 90 % quantiles of log(observed / predicted) / exp(growth_rate * "
            "max(0, log2(num_gpus / 8))) per bin of the distance "
            "|log2(num_gpus / nearest pilot GPU count at or below)|, multiplied back per "
            "configuration (trainscale.sim.pilot_intervals)",
            "command": "trainscale calibrate --measurements FILE -o OUT",
            "pilot_gpus": list(self.pilot_gpus),
            "pilots_covered": self.pilots_covered,
            "bins": bins_as_dicts(self.lower, self.upper, self.rows, self.capped),
            "max_log2_distance_measured": self.max_distance,
            "widening_per_doubling_beyond": PER_DOUBLING,
            **growth_as_dict(self.growth_rate),
            **reach_as_dict(self.reach),
        }
        if self.coverage is not None:
            out["source_out_coverage"] = self.coverage
        if self.measured_levels:
            offsets: dict[str, dict[str, float]] = {}
            for framework, base, value in self.shipped_offsets:
                offsets.setdefault(framework, {})[base] = value
            out["levels"] = {
                "rule": "a configuration whose (framework, GPU) no measured row ran keeps the "
                "shipped level (these offsets) and the shipped interval, flagged "
                "unmeasured_level:FRAMEWORK/GPU in extrapolation",
                "measured": [list(pair) for pair in self.measured_levels],
                "shipped_offsets": offsets,
            }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PilotIntervals:
        lower, upper, rows = bins_from_dicts(data["bins"], "pilot: ")
        return cls(
            reach=reach_from_dict(data),
            capped=capped_from_dicts(data["bins"]),
            growth_rate=growth_from_dict(data),
            pilot_gpus=tuple(int(g) for g in data["pilot_gpus"]),
            lower=lower,
            upper=upper,
            rows=rows,
            max_distance=float(data["max_log2_distance_measured"]),
            pilots_covered=str(data.get("pilots_covered", "")),
            coverage=data.get("source_out_coverage"),
            measured_levels=tuple(
                (str(fw), str(gpu)) for fw, gpu in data.get("levels", {}).get("measured", [])
            ),
            shipped_offsets=tuple(
                (str(fw), str(base), float(value))
                for fw, by_base in data.get("levels", {}).get("shipped_offsets", {}).items()
                for base, value in by_base.items()
            ),
        )


def bins_as_dicts(
    lower: tuple[float, ...],
    upper: tuple[float, ...],
    rows: tuple[int, ...],
    capped: tuple[bool, ...] = (),
) -> list[dict[str, Any]]:
    """The per-bin quantiles as a calibration file writes them: one mapping per bin of
    :data:`BIN_EDGES` (its log2 distance range, lower and upper log factors, rows, and whether
    the interval is clipped to the shipped one there when ``capped`` is given)."""
    edges = (0.0, *BIN_EDGES)
    return [
        {
            "log2_distance_from": float(lo),
            "log2_distance_to": None if k == len(BIN_EDGES) else float(BIN_EDGES[k]),
            "lower_log_factor": lower[k],
            "upper_log_factor": upper[k],
            "rows": rows[k],
            **({"capped_at_shipped": bool(capped[k])} if capped else {}),
        }
        for k, lo in enumerate(edges)
    ]


def with_shipped(
    lower: np.ndarray,
    upper: np.ndarray,
    shipped_lower: np.ndarray,
    shipped_upper: np.ndarray,
    capped: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Pilot log factors set against the shipped interval's: where ``capped`` (the shipped width
    was enough at that distance on the published series) never wider than the shipped interval,
    elsewhere (it was not) never narrower than it (:mod:`trainscale.calibrate.pilot_reach`)."""
    return (
        np.where(capped, np.maximum(lower, shipped_lower), np.minimum(lower, shipped_lower)),
        np.where(capped, np.minimum(upper, shipped_upper), np.maximum(upper, shipped_upper)),
    )


def capped_from_dicts(bins: list[dict[str, Any]]) -> tuple[bool, ...]:
    """Per bin, ``capped_at_shipped`` as :func:`bins_as_dicts` wrote it (empty when no bin
    records it: files written before the cap, never clipped)."""
    if not any("capped_at_shipped" in b for b in bins):
        return ()
    return tuple(bool(b.get("capped_at_shipped", False)) for b in bins)


def growth_as_dict(rate: float) -> dict[str, Any]:
    """The absolute-scale growth rate as a calibration file writes it (nothing when 0)."""
    if rate == 0.0:
        return {}
    return {
        "growth_rate_per_doubling": rate,
        "growth_rule": "the bins' log factors are multiplied by exp(growth_rate_per_doubling * "
        "max(0, log2(num_gpus / 8))) of the target (trainscale.sim.interval_scale.growth_rate, "
        "fitted on the same errors)",
    }


def growth_from_dict(data: dict[str, Any]) -> float:
    """The growth rate :func:`growth_as_dict` wrote (0 when absent)."""
    return float(data.get("growth_rate_per_doubling", 0.0))


def reach_as_dict(reach: float) -> dict[str, Any]:
    """The reach as a calibration file writes it (nothing when unlimited)."""
    if math.isinf(reach):
        return {}
    return {
        "reach_log2_distance": reach,
        "reach_rule": "beyond this distance from the measured GPU counts a configuration keeps "
        "the shipped level and interval, flagged beyond_pilot_reach (trainscale validate "
        "--pilots prints the evidence by distance)",
    }


def reach_from_dict(data: dict[str, Any]) -> float:
    """The reach :func:`reach_as_dict` wrote (unlimited when absent)."""
    value = data.get("reach_log2_distance")
    return math.inf if value is None else float(value)


def bins_from_dicts(
    bins: list[dict[str, Any]], where: str = ""
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]]:
    """``(lower, upper, rows)`` of the bins :func:`bins_as_dicts` wrote; a wrong bin count is a
    ``ValueError`` (prefixed ``where``)."""
    if len(bins) != len(BIN_EDGES) + 1:
        raise ValueError(f"{where}{len(bins)} bins, expected {len(BIN_EDGES) + 1}")
    return (
        tuple(float(b["lower_log_factor"]) for b in bins),
        tuple(float(b["upper_log_factor"]) for b in bins),
        tuple(int(b["rows"]) for b in bins),
    )
