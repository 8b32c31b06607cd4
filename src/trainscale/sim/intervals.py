"""80 % prediction intervals: split conformal prediction on the leave-one-source-out residuals.

Method (decided before any coverage was measured; nothing here is tuned to hit the coverage)
-------------------------------------------------------------------------------------------
1. **Residuals.** :func:`trainscale.calibrate.fit.held_out_predictions` predicts every published
   throughput row with a fit that left the row's whole source out. The residual of a row is
   ``r = log(predicted / observed)`` of tokens/s per GPU: how far the model misses a source it
   was not fitted on, which is what a user's unseen cluster gets.
2. **Difficulty** ``sigma(x) >= 1`` of a configuration, from *coverage facts* of the data the
   predicting fit saw (for a residual: every source but its own; for a prediction: every
   source): ``sigma = s_framework * s_scale * s_gpu * s_support * s_nodes`` with

   - ``s_framework = sqrt(1 + ROWS_REFERENCE / max(n, 1))``, ``n`` the throughput rows of the
     row's framework. An estimate from ``n`` rows is uncertain like ``1/sqrt(n)``;
     ``ROWS_REFERENCE = 10`` rows is where a framework's own offsets are taken to be as uncertain
     as the spread of the pool (so 10 rows widen by sqrt 2, 250 rows by 2 %, none by sqrt 11).
   - ``s_scale = 1 + PER_DOUBLING * max(0, log2(num_gpus / max_gpus))``, ``max_gpus`` the most
     GPUs of any calibrated run of that framework (of any framework when it has none).
     ``PER_DOUBLING = 0.25``: the paper measured about 11 % (0.11 in log) of per-GPU throughput
     lost per doubling from 128 to 2,048 GPUs; a model extrapolating that slope may miss it by
     its whole size, and 0.11 is about a quarter of the 80 % quantile of held-out log errors one
     expects from a 13 % held-out MAPE (about 0.4 for errors spread like this model's).
   - ``s_gpu = GPU_WITHOUT_DATA = 1.5`` for a GPU with no throughput row (its catalogued GEMM,
     attention and memory efficiencies are then untested against any training run), else 1.
   - ``s_support``: the product of the widening factors of the configuration's out-of-support
     flags (framework x sharding beyond its largest run, model size or sequence length outside
     the data, tp/pp/cp above any calibrated degree), 1 when none; the flags, the factors and
     their reasoning are in :mod:`trainscale.sim.support` (the ``extrapolation`` column).
   - ``s_nodes = 1 + b * max(0, log2(num_gpus / 8))``: the model's miss grows with the scale of
     the run; ``b`` is fitted on the held-out residuals (for a residual: on the other sources'),
     :mod:`trainscale.sim.interval_scale`.

3. **Score** ``|r| / sigma``. **Quantile per framework** (Mondrian conformal, level
   ``LEVEL = 0.8``): the weighted quantile of its rows' scores at ``ceil((n + 1) * 0.8) / n``
   (the finite-sample correction; capped at 1, i.e. the largest score), every source weighing
   the same within the framework (as in the fit). A framework with fewer than ``MIN_ROWS = 10``
   rows or ``MIN_SOURCES = 2`` sources falls back to the pooled quantile (all rows, every source
   the same weight) times ``POOLED_WIDENING = 1.5``: a framework whose misses have not been
   measured on two independent sources is assumed to miss by half again as much as the pool.
4. **Interval** of tokens/s per GPU: ``pred * exp(-q * sigma) .. pred * exp(+q * sigma)``;
   ``step_time_s_lo/hi`` follow inversely (a step time is tokens per step / throughput).

**Honest coverage** (:func:`source_out_coverage`): for each source, the whole procedure (facts,
scores, quantiles) is rerun without that source and its rows are checked against the interval;
reported overall, per source and per framework (``trainscale calibrate`` stores it in the
``intervals`` block of ``data/calibration.yaml``). The in-sample coverage of the shipped
quantiles would be 80 % by construction and says nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.sim.interval_scale import REFERENCE_GPUS, scale_factor, scale_slope
from trainscale.sim.pilot_intervals import with_shipped
from trainscale.sim.quantile import LEVEL, PER_DOUBLING, weighted_quantile
from trainscale.sim.support import DEGREE_PER_DOUBLING, SHAPE_PER_DOUBLING, SHARDING_WITHOUT_DATA
from trainscale.sim.support_facts import SUPPORT_COLUMNS, CoverageFacts

if TYPE_CHECKING:
    from trainscale.sim.pilot_intervals import PilotIntervals

__all__ = [
    "GPU_WITHOUT_DATA",
    "METHOD",
    "MIN_ROWS",
    "MIN_SOURCES",
    "POOLED_WIDENING",
    "ROWS_REFERENCE",
    "CoverageFacts",
    "PredictionIntervals",
    "coverage_summary",
    "difficulty",
    "fit_intervals",
    "source_out_coverage",
]

ROWS_REFERENCE = 10.0
GPU_WITHOUT_DATA = 1.5
MIN_ROWS = 10
MIN_SOURCES = 2
POOLED_WIDENING = 1.5

METHOD = (
    "split conformal prediction on leave-one-source-out residuals r = log(predicted/observed) of "
    "tokens/s per GPU; score |r| / sigma(x), sigma = sqrt(1 + rows_reference / max(n_framework, "
    "1)) * (1 + per_doubling * max(0, log2(num_gpus / max_gpus_framework))) * (gpu_without_data "
    "if the GPU has no throughput row else 1) * s_support (out-of-support widening per "
    "extrapolation flag, for sharding ranks, model size, sequence length, tp/pp/cp, see "
    "trainscale.sim.support), constants fixed a priori "
    "(trainscale.sim.intervals); "
    "quantile per framework (Mondrian) at ceil((n+1)*level)/n, every source weighing the same, "
    "pooled quantile x pooled_widening where a framework has < min_rows rows or < min_sources "
    "sources; interval pred*exp(-q*sigma) .. pred*exp(+q*sigma)"
)

_RESIDUAL_COLUMNS = (
    "citation", "framework", "num_gpus", "gpu", "observed_tokens_per_s_per_gpu",
    "predicted_tokens_per_s_per_gpu",
)  # fmt: skip


def difficulty(
    framework: np.ndarray,
    num_gpus: np.ndarray,
    has_gpu_data: np.ndarray,
    facts: CoverageFacts,
    widening: np.ndarray | float = 1.0,
    slope: float = 0.0,
    *,
    framework_keys: Sequence[str],
) -> np.ndarray:
    """``sigma(x) >= 1`` per configuration (see the module docstring); ``framework`` holds
    indices into ``framework_keys`` (the caller's framework list); ``widening``: the
    out-of-support factor ``s_support`` of :mod:`trainscale.sim.support` (1 where every flag is
    clear); ``slope``: ``b`` of ``s_nodes`` (:mod:`trainscale.sim.interval_scale`)."""
    rows, most = facts.framework_arrays(framework_keys)
    s_framework = np.sqrt(1.0 + ROWS_REFERENCE / np.maximum(rows, 1.0))
    doublings = np.maximum(0.0, np.log2(np.asarray(num_gpus, np.float64) / most[framework]))
    s_gpu = np.where(has_gpu_data, 1.0, GPU_WITHOUT_DATA)
    s_nodes = scale_factor(num_gpus, slope)
    return s_framework[framework] * (1.0 + PER_DOUBLING * doublings) * s_gpu * widening * s_nodes


def _support_widening(
    part: pd.DataFrame, facts: CoverageFacts, framework_keys: Sequence[str]
) -> np.ndarray | float:
    """``s_support`` of residual rows against ``facts`` (1 for rows without the columns)."""
    if not set(SUPPORT_COLUMNS) <= set(part.columns):
        return 1.0
    from trainscale.sim.support import support_of_rows

    return support_of_rows(part.reset_index(drop=True), facts, framework_keys).widening


def _corrected_level(n: int) -> float:
    return min(1.0, math.ceil((n + 1) * LEVEL) / n)


def _source_weights(citations: pd.Series) -> np.ndarray:
    return 1.0 / citations.map(citations.value_counts()).to_numpy(np.float64)


def _framework_index(names: pd.Series, framework_keys: Sequence[str]) -> np.ndarray:
    return names.map({fw: i for i, fw in enumerate(framework_keys)}).to_numpy(np.int64)


def _keys_of(rows: pd.DataFrame, framework_keys: Sequence[str] | None) -> tuple[str, ...]:
    """The framework list given, else the frameworks ``rows`` name (in order of appearance):
    the scores, sigmas and coverage of rows do not depend on frameworks without rows."""
    if framework_keys is not None:
        return tuple(framework_keys)
    return tuple(dict.fromkeys(str(fw) for fw in rows["framework"]))


def _scores(rows: pd.DataFrame, framework_keys: Sequence[str]) -> np.ndarray:
    """Score of each residual row, its sigma computed from the facts of the *other* sources
    (the data the fit that predicted it was fitted on)."""
    r = np.log(
        rows["predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
        / rows["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
    )
    sigma = np.empty(len(rows))
    for source in rows["citation"].unique():
        own = (rows["citation"] == source).to_numpy()
        facts = CoverageFacts.of(rows[~own], framework_keys)
        part = rows[own]
        sigma[own] = difficulty(
            _framework_index(part["framework"], framework_keys),
            part["num_gpus"].to_numpy(np.float64),
            part["gpu"].isin(facts.gpus_with_data).to_numpy(), facts,
            _support_widening(part, facts, framework_keys), scale_slope(rows[~own]),
            framework_keys=framework_keys,
        )  # fmt: skip
    return np.abs(r) / sigma


@dataclass(frozen=True, slots=True)
class _Quantile:
    value: float
    kind: str
    """``framework`` (its own rows) or ``pooled`` (the pooled quantile times the widening)."""
    rows: int
    sources: int


def _quantiles(
    rows: pd.DataFrame, scores: np.ndarray, framework_keys: Sequence[str]
) -> tuple[float, dict[str, _Quantile]]:
    pooled = weighted_quantile(scores, _source_weights(rows["citation"]),
                               _corrected_level(len(rows)))  # fmt: skip
    out = {}
    for fw in framework_keys:
        mine = (rows["framework"] == fw).to_numpy()
        n, sources = int(mine.sum()), int(rows.loc[mine, "citation"].nunique())
        if n >= MIN_ROWS and sources >= MIN_SOURCES:
            value = weighted_quantile(
                scores[mine], _source_weights(rows.loc[mine, "citation"]), _corrected_level(n)
            )
            out[fw] = _Quantile(value, "framework", n, sources)
        else:
            out[fw] = _Quantile(POOLED_WIDENING * pooled, "pooled", n, sources)
    return pooled, out


def _round(value: float) -> float:
    return float(f"{value:.6g}")


@dataclass(frozen=True, slots=True)
class PredictionIntervals:
    """The ``intervals`` block of a calibration file: everything a prediction's interval needs."""

    level: float
    pooled_quantile: float
    quantiles: tuple[tuple[str, float, str, int, int], ...]
    """Per framework: (framework, quantile of the normalised score, kind, rows, sources)."""
    facts: CoverageFacts
    coverage: dict[str, Any] | None = field(default=None, compare=False)
    """Source-out coverage as measured (:func:`coverage_summary`), for the record."""
    note: str = field(default="", compare=False)
    """What the intervals are (e.g. those of a user calibration)."""
    scale_slope: float = 0.0
    """``b`` of the scale factor ``s_nodes`` (:mod:`trainscale.sim.interval_scale`), fitted on
    the held-out residuals; 0 in files written before it existed."""
    pilot: PilotIntervals | None = None
    """A pilot-calibrated calibration's intervals (:mod:`trainscale.sim.pilot_intervals`); when
    set they replace the conformal ones (:meth:`log_factors`)."""

    def quantile_array(self, framework_keys: Sequence[str]) -> np.ndarray:
        """The quantile of each framework of ``framework_keys``, in that order (a framework
        without one: the pooled quantile times :data:`POOLED_WIDENING`)."""
        table = {fw: q for fw, q, *_ in self.quantiles}
        return np.array([table.get(fw, POOLED_WIDENING * self.pooled_quantile)
                         for fw in framework_keys])  # fmt: skip

    def log_factors(
        self,
        framework: np.ndarray,
        num_gpus: np.ndarray,
        gpu_index: np.ndarray,
        gpu_keys: tuple[str, ...],
        widening: np.ndarray | float = 1.0,
        *,
        framework_keys: tuple[str, ...],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper log factors of tokens/s per GPU per configuration (vectorised):
        those of the ``pilot`` block when set (for the (framework, GPU) pairs its measurements
        ran, where it records them, within its reach: never wider than ``-/+ q_framework *
        sigma(x)`` at distances where that width was enough on the published series, never
        narrower where it was not), else ``-/+ q_framework * sigma(x)``; both times
        ``widening`` (``s_support`` of :mod:`trainscale.sim.support`: what no calibration row
        covers widens a pilot-calibrated interval as it widens the shipped one). ``gpu_index``
        indexes ``gpu_keys``, the sorted GPU keys of the hardware catalogue the configurations
        were built with; ``framework`` indexes ``framework_keys``, its framework list."""
        base, log2_most, gpus = _tables(self, gpu_keys, framework_keys)
        excess = np.log2(num_gpus) - log2_most[framework]
        scale = 1.0 + PER_DOUBLING * np.maximum(excess, 0.0)
        half = base[framework * gpus + gpu_index] * scale * widening
        half = half * scale_factor(num_gpus, self.scale_slope)
        if self.pilot is None:
            return -half, half
        # a pilot-calibrated calibration (trainscale.calibrate.pilot): the pilot block for the
        # (framework, GPU) pairs its measurements ran within the pilots' reach, clipped to the
        # conformal interval where the published series showed its width was enough and never
        # narrower than it where not (trainscale.calibrate.pilot_reach); the conformal
        # interval for the others
        lower, upper = self.pilot.log_factors(num_gpus)
        lower, upper = lower * widening, upper * widening
        if self.pilot.capped:
            lower, upper = with_shipped(lower, upper, -half, half, self.pilot.capped_at(num_gpus))
        measured = self.pilot.measured(framework, gpu_index, gpu_keys, framework_keys)
        measured &= ~self.pilot.beyond_reach(num_gpus)
        return np.where(measured, lower, -half), np.where(measured, upper, half)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "level": self.level,
            "method": METHOD,
            "scale_slope": {
                "value": self.scale_slope,
                "reference_gpus": REFERENCE_GPUS,
                "what": "sigma x (1 + b max(0, log2(num_gpus / reference_gpus))), b fitted on "
                "the held-out residuals (trainscale.sim.interval_scale)",
            },
            "constants": {
                "rows_reference": ROWS_REFERENCE,
                "per_doubling": PER_DOUBLING,
                "gpu_without_data": GPU_WITHOUT_DATA,
                "min_rows": MIN_ROWS,
                "min_sources": MIN_SOURCES,
                "pooled_widening": POOLED_WIDENING,
                "sharding_without_data": SHARDING_WITHOUT_DATA,
                "shape_per_doubling": SHAPE_PER_DOUBLING,
                "degree_per_doubling": DEGREE_PER_DOUBLING,
                "reasoning": "fixed a priori, never tuned to the coverage (see the docstring of "
                "trainscale.sim.intervals)",
            },
        }
        if self.note:
            out["note"] = self.note
        out["pooled_quantile"] = _round(self.pooled_quantile)
        out["quantiles"] = {
            fw: {"value": _round(q), "kind": kind, "rows": rows, "sources": sources}
            for fw, q, kind, rows, sources in self.quantiles
        }
        out["coverage_facts"] = self.facts.as_dict()
        if self.coverage is not None:
            out["source_out_coverage"] = self.coverage
        if self.pilot is not None:
            out["pilot"] = self.pilot.as_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PredictionIntervals:
        from trainscale.sim.pilot_intervals import PilotIntervals

        return cls(
            level=float(data["level"]),
            pooled_quantile=float(data["pooled_quantile"]),
            quantiles=tuple(
                (str(fw), float(q["value"]), str(q["kind"]), int(q["rows"]), int(q["sources"]))
                for fw, q in data["quantiles"].items()
            ),
            facts=CoverageFacts.from_dict(data["coverage_facts"]),
            coverage=data.get("source_out_coverage"),
            note=str(data.get("note", "")),
            scale_slope=float(data.get("scale_slope", {}).get("value", 0.0)),
            pilot=PilotIntervals.from_dict(data["pilot"]) if "pilot" in data else None,
        )


@cache
def _tables(
    intervals: PredictionIntervals, keys: tuple[str, ...], framework_keys: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, int]:
    """``q * s_framework * s_gpu`` per (framework of ``framework_keys``, GPU of ``keys``),
    flattened framework-major; log2 of the most GPUs per framework; the number of GPUs."""
    rows, most = intervals.facts.framework_arrays(framework_keys)
    s_framework = np.sqrt(1.0 + ROWS_REFERENCE / np.maximum(rows, 1.0))
    has = set(intervals.facts.gpus_with_data)
    s_gpu = np.array([1.0 if k in has else GPU_WITHOUT_DATA for k in keys])
    base = (intervals.quantile_array(framework_keys) * s_framework)[:, None] * s_gpu[None, :]
    return base.ravel(), np.log2(most), len(keys)


def _require(rows: pd.DataFrame) -> None:
    missing = [c for c in _RESIDUAL_COLUMNS if c not in rows.columns]
    if missing:
        from trainscale.errors import TrainscaleError

        raise TrainscaleError(f"intervals: held-out rows lack column(s) {', '.join(missing)}")


def fit_intervals(
    held_out: pd.DataFrame, *, framework_keys: Sequence[str], coverage: bool = True
) -> PredictionIntervals:
    """The intervals of a calibration from its leave-one-source-out predictions
    (:func:`trainscale.calibrate.fit.held_out_predictions`), with the source-out coverage;
    a quantile and coverage facts for every framework of ``framework_keys`` (the caller's
    framework list, ``Catalogue.framework_keys``), in that order."""
    _require(held_out)
    rows = held_out.reset_index(drop=True)
    keys = tuple(framework_keys)
    pooled, quantiles = _quantiles(rows, _scores(rows, keys), keys)
    summary = None
    if coverage:
        summary = coverage_summary(source_out_coverage(rows, framework_keys=keys))
    return PredictionIntervals(
        level=LEVEL,
        pooled_quantile=pooled,
        quantiles=tuple((fw, q.value, q.kind, q.rows, q.sources) for fw, q in quantiles.items()),
        facts=CoverageFacts.of(rows, keys),
        coverage=summary,
        scale_slope=scale_slope(rows),
    )


def source_out_coverage(
    held_out: pd.DataFrame, *, framework_keys: Sequence[str] | None = None
) -> pd.DataFrame:
    """Each row's interval computed as if its source had never been seen, and whether it covers.

    ``framework_keys``: the caller's framework list; None: the frameworks the rows name (the
    result is the same: a framework without rows changes no row's interval).

    For each source: scores and quantiles from the other sources' rows only, the row's
    ``sigma`` from their coverage facts. Returns the rows with ``log_error``, ``sigma``,
    ``quantile``, ``quantile_kind``, ``tokens_per_s_per_gpu_lo``/``_hi`` (around the held-out
    prediction), ``width_pct`` (``100 (hi - lo) / predicted``) and ``covered``.
    """
    _require(held_out)
    rows = held_out.reset_index(drop=True).copy()
    keys = _keys_of(rows, framework_keys)
    scores = _scores(rows, keys)
    predicted = rows["predicted_tokens_per_s_per_gpu"].to_numpy(np.float64)
    r = np.log(predicted / rows["observed_tokens_per_s_per_gpu"].to_numpy(np.float64))
    half = np.empty(len(rows))
    q_used = np.empty(len(rows))
    sigma = np.empty(len(rows))
    kind = np.empty(len(rows), dtype=object)
    for source in rows["citation"].unique():
        own = (rows["citation"] == source).to_numpy()
        others = rows[~own]
        _, quantiles = _quantiles(others, scores[~own], keys)
        facts = CoverageFacts.of(others, keys)
        part = rows[own]
        frameworks = _framework_index(part["framework"], keys)
        sigma[own] = difficulty(
            frameworks, part["num_gpus"].to_numpy(np.float64),
            part["gpu"].isin(facts.gpus_with_data).to_numpy(), facts,
            _support_widening(part, facts, keys), scale_slope(others), framework_keys=keys,
        )  # fmt: skip
        q_used[own] = [quantiles[fw].value for fw in part["framework"]]
        kind[own] = [quantiles[fw].kind for fw in part["framework"]]
        half[own] = q_used[own] * sigma[own]
    rows["log_error"] = r
    rows["sigma"] = sigma
    rows["quantile"] = q_used
    rows["quantile_kind"] = kind
    rows["tokens_per_s_per_gpu_lo"] = predicted * np.exp(-half)
    rows["tokens_per_s_per_gpu_hi"] = predicted * np.exp(half)
    rows["width_pct"] = 100.0 * (np.exp(half) - np.exp(-half))
    rows["covered"] = np.abs(r) <= half
    return rows


def _group(rows: pd.DataFrame) -> dict[str, Any]:
    return {
        "rows": len(rows),
        "coverage_pct": _round(100.0 * rows["covered"].mean()),
        "median_width_pct": _round(float(rows["width_pct"].median())),
    }


def coverage_summary(rows: pd.DataFrame) -> dict[str, Any]:
    """Source-out coverage of :func:`source_out_coverage` rows: overall (of rows, and with every
    source weighing the same), per framework and per source, with the median interval width
    (``100 (hi - lo) / predicted``, %)."""
    per_source = {str(s): _group(g) for s, g in rows.groupby("citation", sort=True)}
    return {
        "what": "each source's rows covered by intervals computed without that source "
        "(scores, quantiles and coverage facts of the other sources only)",
        "overall": _group(rows),
        "overall_source_weighted_pct": _round(
            float(np.mean([100.0 * g["covered"].mean() for _, g in rows.groupby("citation")]))
        ),
        "per_framework": {str(f): _group(g) for f, g in rows.groupby("framework", sort=True)},
        "per_source": per_source,
    }
