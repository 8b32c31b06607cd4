"""The tables the fits return: log-log, Universal Scalability Law and marginal returns."""

from __future__ import annotations

from trainscale.schema.column import Column, _c
from trainscale.schema.shared import POINTS_FITTED, X_MAX, X_MIN

_FIT_METRIC = _c("metric", "string", "1", "the column fitted")
_FIT_NOTE = _c("note", "string", "1", "why a value is NaN, or what was dropped; '' if nothing")

#: Columns of :func:`trainscale.fits.loglog.fit_loglog` after the series (``by``) columns: the
#: power law ``log2(y) = intercept + slope * log2(x)`` of each series and metric.
LOGLOG_COLUMNS: tuple[Column, ...] = (
    _FIT_METRIC,
    _c("n", "int64", "1", "points fitted (rows with a missing x or y are dropped)"),
    X_MIN,
    X_MAX,
    _c("slope", "float64", "1", "elasticity of y in x (1: linear scaling, 0: flat)"),
    _c("slope_se", "float64", "1", "HC3 heteroskedasticity-robust standard error of the slope"),
    _c("slope_ci_low", "float64", "1", "lower end of the slope's Student-t interval"),
    _c("slope_ci_high", "float64", "1", "upper end of the slope's Student-t interval"),
    _c("intercept", "float64", "log2 of y's unit", "log2(y) at x = 1"),
    _c("r2", "float64", "1", "R² on the log2 scale; NaN when log2(y) has no spread"),
    _c(
        "pct_change_per_doubling",
        "float64",
        "%",
        "change of y when x doubles: 100 * (2**slope - 1)",
    ),
    _c("pct_change_per_doubling_ci_low", "float64", "%", "the slope interval's lower end, mapped"),
    _c("pct_change_per_doubling_ci_high", "float64", "%", "the slope interval's upper end, mapped"),
    _FIT_NOTE,
)


def _interval(name: str, unit: str, what: str) -> tuple[Column, ...]:
    """``name``, its standard error and its interval's ends."""
    return (
        _c(name, "float64", unit, what),
        _c(f"{name}_se", "float64", unit, f"standard error of {name}"),
        _c(f"{name}_ci_low", "float64", unit, f"lower end of the interval of {name}"),
        _c(f"{name}_ci_high", "float64", unit, f"upper end of the interval of {name}"),
    )


#: Columns of :func:`trainscale.fits.usl.fit_usl_table` after the series (``by``) columns: the
#: Universal Scalability Law ``X(N) = x1 N / (1 + sigma (N - 1) + kappa N (N - 1))`` of each
#: series; the fields of :class:`trainscale.fits.usl.UslFit` but its covariance.
USL_COLUMNS: tuple[Column, ...] = (
    _FIT_METRIC,
    *_interval("x1", "see metric", "throughput of one GPU without contention (Wald on ln x1)"),
    *_interval("sigma", "1", "contention coefficient in [0, 1] (interval clipped to it)"),
    *_interval("kappa", "1", "coherency coefficient >= 0 (interval clipped at 0)"),
    _c("n_star", "float64", "GPUs", "GPU count of peak throughput; inf when kappa = 0"),
    _c("n_star_ci_low", "float64", "GPUs", "lower end of the interval of n_star (>= 1)"),
    _c("n_star_ci_high", "float64", "GPUs", "upper end of the interval of n_star; inf: no peak"),
    _c("n_star_ci_method", "string", "1", "how the n_star interval was made: delta or bootstrap"),
    _c("r2", "float64", "1", "R² of ln(X / N), the per-GPU throughput"),
    _c("residual_sd_log", "float64", "1", "residual standard deviation of ln X"),
    POINTS_FITTED,
    _c("dof", "int64", "1", "residual degrees of freedom, n - 3"),
    _c("level", "float64", "1", "confidence level of every interval"),
    _c("converged", "bool", "1", "the optimiser converged (false when nothing could be fitted)"),
    _c("note", "string", "1", "why values are NaN, active bounds, what was dropped; '' if none"),
)

#: Columns of :func:`trainscale.fits.marginal.marginal_returns` after the series (``by``)
#: columns: one row per pair of consecutive GPU counts.
MARGINAL_COLUMNS: tuple[Column, ...] = (
    _c("n_from", "int64", "GPUs", "the smaller GPU count of the pair"),
    _c("n_to", "int64", "GPUs", "the larger GPU count of the pair"),
    _c("tokens_per_s_from", "float64", "tokens/s", "throughput at n_from, mean of replicates"),
    _c("tokens_per_s_to", "float64", "tokens/s", "throughput at n_to, mean of replicates"),
    _c("power_kw_from", "float64", "kW", "total GPU power at n_from, mean of replicates"),
    _c("power_kw_to", "float64", "kW", "total GPU power at n_to, mean of replicates"),
    _c("added_tokens_per_s_per_gpu", "float64", "tokens/s", "throughput per added GPU: ΔX / ΔN"),
    _c(
        "added_tokens_per_s_per_kw",
        "float64",
        "tokens/s per kW",
        "throughput per added kW of total GPU power: ΔX / ΔP; NaN when power did not rise",
    ),
    *(
        _c(f"usl_added_tokens_per_s_per_{per}{end}", "float64", unit, f"{what}{suffix}")
        for per, unit, what in (
            ("gpu", "tokens/s", "the USL fit's (X(n_to) - X(n_from)) / ΔN"),
            ("kw", "tokens/s per kW", "the USL fit's secant divided by the measured ΔP"),
        )
        for end, suffix in (
            ("", "; NaN unless usl=True"),
            ("_ci_low", ": lower end of its delta-method band"),
            ("_ci_high", ": upper end of its delta-method band"),
        )
    ),
    _c("note", "string", "1", "replicates averaged, rows dropped, why a value is NaN"),
)

#: Columns of :func:`trainscale.fits.marginal.usl_marginal`: a USL fit's derivative dX/dN on a
#: grid of GPU counts, with a delta-method band.
USL_MARGINAL_COLUMNS: tuple[Column, ...] = (
    _c("n", "float64", "GPUs", "GPU count of the grid"),
    *(
        _c(f"marginal_tokens_per_s_per_{per}{end}", "float64", unit, f"{what}{suffix}")
        for per, unit, what in (
            ("gpu", "tokens/s", "dX/dN: throughput per added GPU (0 at n_star, negative beyond)"),
            ("kw", "tokens/s per kW", "dX/dN divided by the power one more GPU adds"),
        )
        for end, suffix in (
            ("", ""),
            ("_ci_low", ": lower end of its band"),
            ("_ci_high", ": upper end of its band"),
        )
    ),
)
