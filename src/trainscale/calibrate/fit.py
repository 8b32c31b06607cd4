"""``trainscale calibrate``: fit the simulator's free parameters to the published measurements.

Method
------
1. Normalise ``data/published/measurements.csv`` (:mod:`trainscale.published.measurements`):
throughput rows
   (converted to tokens/s per GPU with each source's FLOP convention), nccl-tests bus-bandwidth
   rows, and rejects with their reasons.
2. Fit the ``throughput`` parameters that are marked ``fitted`` in
   :func:`trainscale.sim.parameters.parameters` (for the catalogue's framework list) by bounded
   least squares
   (:func:`scipy.optimize.least_squares`, trust-region reflective) on the log error
   ``log(predicted / observed)`` of every predictable throughput row and every bus-bandwidth row.
   **Every source weighs the same**, whatever its row count: a row of a source with ``n_s`` rows
   has weight ``N / (S · n_s)`` (``N`` rows and ``S`` sources in all, so the mean weight is 1), so
   no single software stack or benchmark table decides the shared parameters for everyone. The
   loss is robust (``soft_l1``: quadratic below a 10 % log error, linear above, close to the
   absolute error the MAPE gate measures), applied row by row before the weight. A Gaussian prior
   centres each parameter on its sourced or estimated default (standard deviation: half its bound
   range; 0.1 for the per-framework offsets, so a framework with few rows stays near the shared
   value), which decides only what the data barely constrain.
3. Fit no power parameter: the GPU-board phase fractions are set from their sources
   (:data:`trainscale.sim.parameters.SHARED_PARAMETERS`), so the published power anchor
   (``power_anchor`` in ``data/published/sources.yaml``: Fernandez et al.'s power per GPU falling
   5.87 % from 128 to 2,048 GPUs) is a prediction checked against the paper
   (:func:`power_drop_pct`, the claims table), not a target; node power is the separate power
   stage (:mod:`trainscale.calibrate.power`).
4. Fit the 80 % prediction intervals (:mod:`trainscale.sim.intervals`): split conformal prediction
   on the leave-one-source-out residuals (:func:`held_out_predictions`, one refit per source),
   with their source-out coverage, into the file's ``intervals`` block (not a parameter: it does
   not enter ``calibration_id``).
5. Write ``data/calibration.yaml``: each value with its bounds, prior and meaning, the rows it was
   fitted on, the rows that could not be represented (with reasons), the fit's residual error, the
   content hash ``calibration_id``, and the pilot interval table every user calibration on it
   reads (``published_pilot_errors``, measured once with it: :mod:`trainscale.calibrate.stored`).

Nothing is tuned per data point: every parameter is shared by all configurations. The
published measurements and the catalogue the fit simulates with are the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from trainscale.errors import TrainscaleError
from trainscale.published.accuracy import (
    CollectiveRows,
    collective_predictions,
    throughput_predictions,
)
from trainscale.published.measurements import PublishedData
from trainscale.published.sources import PowerAnchor
from trainscale.published.summary import summarise
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.parameters import ParameterSpec, parameter_spec, parameters
from trainscale.sim.simulate import predict
from trainscale.sim.throughput import throughput_per_gpu

__all__ = [
    "FittedCalibration",
    "fit_throughput",
    "held_out_predictions",
    "leave_one_source_out",
    "line_ranges",
    "power_drop_pct",
    "round_calibration",
    "source_weights",
    "throughput_parameters",
]


@dataclass(frozen=True, slots=True)
class FittedCalibration:
    """The result of a calibration run: values, per-row residuals and what was left out."""

    calibration: Calibration
    throughput: pd.DataFrame
    """Published throughput rows with prediction and error (``ape_pct``)."""
    collectives: pd.DataFrame
    """nccl-tests rows with predicted bus bandwidth and error."""
    rejects: pd.DataFrame
    """Published rows the normaliser could not represent, with the reason."""
    sim_rejects: pd.DataFrame
    """Normalised rows the simulator's validator rejected, with the reason."""
    cost: float
    """Final value of the least-squares objective."""


#: Scale of the robust loss on log errors (a 10 % error is where it turns from quadratic to linear).
_F_SCALE = 0.1


def source_weights(citations: pd.Series) -> np.ndarray:
    """Per-row weights that give every source the same total weight, with mean 1 over the rows."""
    counts = citations.map(citations.value_counts()).to_numpy(np.float64)
    sources = citations.nunique()
    return len(citations) / (sources * counts)


def _robust(log_error: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Residuals whose squares sum to the weighted soft-L1 loss, for a linear least-squares solver:
    ``sign(r)·f·sqrt(2w(sqrt(1 + (r/f)²) − 1))``, ``≈ sqrt(w)·r`` for small ``r``."""
    z = (log_error / _F_SCALE) ** 2
    return np.sign(log_error) * _F_SCALE * np.sqrt(2.0 * weight * (np.sqrt(1.0 + z) - 1.0))


#: Finite-difference step of the fit's Jacobian, as a share of each parameter's bound range.
DIFF_STEP = 1e-3


def _forward_differences(residuals, lower: np.ndarray, upper: np.ndarray):
    """``(fun, jac)`` for :func:`scipy.optimize.least_squares`: ``residuals`` remembering its
    last evaluation, and its Jacobian by forward differences with an **absolute** step of
    :data:`DIFF_STEP` times each parameter's bound range (backward where the step would cross
    the upper bound). SciPy's relative ``diff_step`` scales the step with ``|x|``, so a
    parameter at or near 0 (every framework offset's prior centre) gets a step below float
    resolution, a zero derivative and a fit that stops there."""
    step = DIFF_STEP * (upper - lower)
    last: dict[str, np.ndarray] = {}

    def fun(x: np.ndarray) -> np.ndarray:
        f = residuals(x)
        last.update(x=np.array(x, copy=True), f=f)
        return f

    def jac(x: np.ndarray) -> np.ndarray:
        same = "x" in last and np.array_equal(last["x"], x)
        f0 = last["f"] if same else residuals(x)
        out = np.empty((len(f0), len(x)))
        for i in range(len(x)):
            h = step[i] if x[i] + step[i] <= upper[i] else -step[i]
            moved = np.array(x, copy=True)
            moved[i] += h
            out[:, i] = (residuals(moved) - f0) / h
        return out

    return fun, jac


def _with(base: Calibration, x: np.ndarray, free: tuple[ParameterSpec, ...]) -> Calibration:
    return replace(base, **{p.name: float(v) for p, v in zip(free, x, strict=True)})


def throughput_parameters(framework_keys: Sequence[str]) -> tuple[ParameterSpec, ...]:
    """The fitted ``throughput`` parameters under the framework list ``framework_keys`` (the
    shared ones, then each framework's offsets), in :func:`~trainscale.sim.parameters.parameters`
    order."""
    return tuple(p for p in parameters(framework_keys) if p.fitted and p.group == "throughput")


def _free_parameters(
    pinned: Mapping[str, float], framework_keys: Sequence[str]
) -> tuple[ParameterSpec, ...]:
    """The fitted throughput parameters minus the pinned ones; checks the pins."""
    throughput = throughput_parameters(framework_keys)
    fitted = {p.name: p for p in throughput}
    for name, value in pinned.items():
        if name not in fitted:
            raise TrainscaleError(
                f"cannot pin {name!r}: not a fitted throughput parameter; "
                f"valid: {', '.join(fitted)}"
            )
        spec = fitted[name]
        if not spec.lower <= value <= spec.upper:
            raise TrainscaleError(
                f"cannot pin {name} at {value:g}: outside its bounds [{spec.lower:g}, "
                f"{spec.upper:g}]"
            )
    return tuple(p for p in throughput if p.name not in pinned)


def fit_throughput(
    published: PublishedData,
    start: Calibration | None = None,
    *,
    catalogue: Catalogue,
    max_nfev: int = 400,
    pinned: Mapping[str, float] | None = None,
    prior_scale: float = 1.0,
    prior_centre: Calibration | None = None,
) -> FittedCalibration:
    """Fit the throughput parameters, simulating under ``catalogue``; return the fitted
    calibration and its residual tables. ``start``: where the fit starts (default the
    parameters' defaults, :meth:`~trainscale.sim.calibration.Calibration.defaults`); the offsets
    fitted are those of the catalogue's framework list (``catalogue.framework_keys``).

    ``pinned`` holds some fitted parameters at given values (a profile, see
    :mod:`trainscale.paper.sensitivity`); the others are fitted as usual. ``prior_scale``
    multiplies
    the width of every parameter's prior (1: the calibration's own; ``inf``: no prior).
    ``prior_centre`` centres the priors on its values instead of the parameters' defaults (a
    user calibration centres them on the shipped calibration).
    """
    pinned = dict(pinned or {})
    if not prior_scale > 0:
        raise TrainscaleError(f"prior_scale must be > 0 (inf for no prior), got {prior_scale}")
    keys = catalogue.framework_keys
    free = _free_parameters(pinned, keys)
    start = replace((start or Calibration.defaults(keys)).for_frameworks(keys), **pinned)
    x0 = np.array([start.value(p.name) for p in free])
    prior = np.array(
        [p.default if prior_centre is None else prior_centre.value(p.name) for p in free]
    )
    lower = np.array([p.lower for p in free])
    upper = np.array([p.upper for p in free])
    prior_sd = prior_scale * np.array(
        [p.prior_sd if p.prior_sd is not None else 0.5 * (p.upper - p.lower) for p in free]
    )
    rows, _ = throughput_predictions(published, start, catalogue)
    collectives = collective_predictions(published, start, catalogue)
    citations = pd.concat(
        [rows["citation"], collectives.get("citation", pd.Series(dtype=str))], ignore_index=True
    )
    weights = source_weights(citations)
    has_collectives = len(collectives) > 0

    # The configurations do not depend on the parameters: validate them once and predict the
    # throughput alone in the loop (the same numbers as throughput_predictions, without building
    # a table or the other metrics per evaluation).
    configs, valid, _ = build_configs(
        published.throughput, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, skip_invalid=True,
    )  # fmt: skip
    observed = published.throughput["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)[valid]
    if has_collectives:
        collective_rows = CollectiveRows.of(published.collectives, catalogue)
        observed_busbw = published.collectives["observed_busbw_gbytes_per_s"].to_numpy(np.float64)

    def residuals(x: np.ndarray) -> np.ndarray:
        cal = _with(start, x, free)
        predicted = throughput_per_gpu(configs, cal, catalogue)
        log_error = np.log(predicted / observed)
        if has_collectives:
            busbw = collective_rows.busbw_gbytes_per_s(cal)
            log_error = np.concatenate([log_error, np.log(busbw / observed_busbw)])
        # Gaussian prior: each parameter is centred on its sourced or estimated default, so that
        # data that barely constrain a parameter leave it near its physical prior, not on a bound.
        return np.concatenate([_robust(log_error, weights), (x - prior) / prior_sd])

    fun, jac = _forward_differences(residuals, lower, upper)
    result = least_squares(
        fun, np.clip(x0, lower, upper), jac=jac, bounds=(lower, upper), x_scale=upper - lower,
        max_nfev=max_nfev,
    )  # fmt: skip
    fitted = _with(start, result.x, free)
    throughput, sim_rejects = throughput_predictions(published, fitted, catalogue)
    return FittedCalibration(
        fitted, throughput, collective_predictions(published, fitted, catalogue),
        published.rejects, sim_rejects, float(result.cost),
    )  # fmt: skip


def power_drop_pct(calibration: Calibration, anchor: PowerAnchor, *, catalogue: Catalogue) -> float:
    """Simulated drop (%) of power per GPU from ``anchor.from_gpus`` to ``anchor.to_gpus`` GPUs
    of the anchor's configuration, under ``catalogue`` and ``calibration``."""
    frame = predict(anchor.configurations(), catalogue=catalogue, calibration=calibration)
    by_n = frame.set_index("num_gpus")["power_w_per_gpu"]
    return float(100.0 * (1.0 - by_n[anchor.to_gpus] / by_n[anchor.from_gpus]))


def line_ranges(rows: object) -> str:
    """Compress line numbers into ``2-11, 13-24, ...``."""
    values = sorted(int(r) for r in rows)  # type: ignore[union-attr]
    spans: list[str] = []
    start = previous = None
    for value in [*values, None]:
        if start is None:
            start = previous = value
        elif value is not None and value == previous + 1:
            previous = value
        else:
            spans.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = previous = value
    return ", ".join(spans)


#: A fitted value is kept to 6 significant digits and to the decimal place at or below this
#: fraction of its bound range. Below that the digits are the solver's floating-point noise, not a
#: fit: refits on two CPUs (different BLAS kernels) differ by about 1e-10 in a value, and a
#: parameter that no row moves (DeepSpeed's FP8 offset: no DeepSpeed FP8 row), held at its prior
#: only by the prior term, ends at about +-1e-24, sign and digits differing between the two. With
#: the decimal place a refit reproduces the file byte for byte on another machine too, unless a
#: value falls within that noise of a rounding boundary.
VALUE_RESOLUTION = 1e-6


def round_calibration(calibration: Calibration) -> Calibration:
    """``calibration`` with every value rounded, once, to 6 significant digits or to the decimal
    place at or below :data:`VALUE_RESOLUTION` times its bound range, whichever is coarser (a
    value closer to 0 than that place is 0)."""

    def rounded(name: str, value: float) -> float:
        spec = parameter_spec(name)
        places = -math.floor(math.log10(VALUE_RESOLUTION * (spec.upper - spec.lower)))
        if value != 0.0:  # one rounding, to whichever place is coarser
            places = min(places, 5 - math.floor(math.log10(abs(value))))
        return round(value, places) + 0.0  # + 0.0: no negative zero

    values = {k: rounded(k, v) for k, v in calibration.as_dict().items()}
    return Calibration(frameworks=calibration.frameworks, **values)


def held_out_predictions(
    published: PublishedData, *, catalogue: Catalogue, prior_scale: float = 1.0
) -> pd.DataFrame:
    """Every throughput row predicted by a fit that left its whole source out (every fit and
    prediction simulated under ``catalogue``).

    One fit per source (on all other throughput sources and every collective row); returns the
    rows of :func:`trainscale.published.accuracy.throughput_predictions` with the held-out
    prediction.
    ``prior_scale`` as in :func:`fit_throughput`.
    """
    held_out = []
    for source in sorted(published.throughput["citation"].unique()):
        keep = published.throughput["citation"] != source
        training = PublishedData(
            throughput=published.throughput[keep].reset_index(drop=True),
            collectives=published.collectives,
            rejects=published.rejects,
            power_anchor=published.power_anchor,
        )
        fit = fit_throughput(training, catalogue=catalogue, prior_scale=prior_scale)
        target = PublishedData(
            throughput=published.throughput[~keep].reset_index(drop=True),
            collectives=published.collectives.iloc[0:0],
            rejects=published.rejects,
        )
        rows, _ = throughput_predictions(target, fit.calibration, catalogue)
        held_out.append(rows)
    return pd.concat(held_out, ignore_index=True)


def leave_one_source_out(
    published: PublishedData, *, catalogue: Catalogue, prior_scale: float = 1.0
) -> pd.DataFrame:
    """Out-of-sample accuracy: for each source, refit on all the others and predict it.

    Returns one row per source (``source``, ``rows``, ``mape_pct``, ``median_ape_pct``,
    ``max_ape_pct``, i.e. :func:`trainscale.published.accuracy.summarise` of
    :func:`held_out_predictions`), plus an ``all`` row over every held-out prediction.
    """
    return summarise(held_out_predictions(published, catalogue=catalogue, prior_scale=prior_scale))
