"""The tables the calibration checks return or write: the profile, the prior scan, held-out
accuracy."""

from __future__ import annotations

from trainscale.schema.column import Column, _c
from trainscale.schema.results import CLAIM_SENSITIVITY_COLUMNS
from trainscale.schema.shared import THROUGHPUT_MAPE_PCT, ape_summary, in_sample_mape

#: The paper setup's claims as :func:`trainscale.paper.setup.headline_claims` computes them, in
#: percent: the columns the calibration checks report next to each refit.
_HEADLINE_CLAIM_COLUMNS: tuple[Column, ...] = tuple(
    c
    for c in CLAIM_SENSITIVITY_COLUMNS
    if c.name in ("throughput_drop_pct", "power_drop_pct", "mfu_a100_pct", "mfu_h100_pct")
)

#: What a refit row ends with: the headline claims, then the refitted calibration's id.
_REFIT_CLAIM_COLUMNS: tuple[Column, ...] = (
    *_HEADLINE_CLAIM_COLUMNS,
    _c("calibration_id", "string", "1", "content hash of the refitted calibration"),
)


def _held_out(prefix: str) -> tuple[Column, ...]:
    """``<prefix>mape_pct`` and ``<prefix>median_ape_pct``: the leave-one-source-out error of
    tokens/s per GPU, in %."""
    return (
        _c(
            f"{prefix}mape_pct",
            "float64",
            "%",
            "mean absolute percentage error of tokens/s per GPU, each source predicted by a fit "
            "without it",
        ),
        _c(f"{prefix}median_ape_pct", "float64", "%", "median of those held-out errors"),
    )


#: Columns of :func:`trainscale.calibrate.sensitivity.profile` (``trainscale calibrate --profile
#: --table``): one row per pinned value of one parameter, the others refitted.
PROFILE_COLUMNS: tuple[Column, ...] = (
    _c("parameter", "string", "1", "the pinned calibration parameter"),
    _c("value", "float64", "see parameter", "the value it is pinned at"),
    THROUGHPUT_MAPE_PCT,
    _c(
        "throughput_median_ape_pct",
        "float64",
        "%",
        "median absolute percentage error of the refit's tokens/s per GPU, published rows",
    ),
    _c(
        "busbw_mape_pct",
        "float64",
        "%",
        "mean absolute percentage error of the refit's nccl-tests bus bandwidth; NaN without rows",
    ),
    *_REFIT_CLAIM_COLUMNS,
)

#: Columns of :func:`trainscale.calibrate.sensitivity.prior_width_scan` (``trainscale calibrate
#: --prior-scan --table``): one row per prior width.
PRIOR_SCAN_COLUMNS: tuple[Column, ...] = (
    _c(
        "prior_scale",
        "float64",
        "1",
        "factor on every prior's width (1: the calibration's; inf: no prior)",
    ),
    THROUGHPUT_MAPE_PCT,
    *_held_out("heldout_"),
    _c(
        "parameters_at_bounds",
        "string",
        "1",
        "fitted parameters that end on a bound, comma-separated (held by the bound, not the data)",
    ),
    *_REFIT_CLAIM_COLUMNS,
)

#: Columns of :func:`trainscale.published.holdout.accuracy` after its first column (``source``,
#: the citation or ``all``, or ``framework``): one row per group, then ``all``.
ACCURACY_COLUMNS: tuple[Column, ...] = (
    _c("rows", "int64", "1", "rows held out"),
    *_held_out("held_out_"),
    _c("held_out_max_ape_pct", "float64", "%", "largest of those held-out errors"),
    in_sample_mape("; NaN where the group has no in-sample row"),
)

#: Columns of :func:`trainscale.published.holdout.collective_accuracy`: the error of the
#: nccl-tests bus bandwidths per source, all sizes and the sizes precise enough to score.
COLLECTIVE_ACCURACY_COLUMNS: tuple[Column, ...] = (
    _c(
        "sizes",
        "string",
        "1",
        "all, >= 16 MiB, or >= 16 MiB, no problem reports (without the NCCL issue reports)",
    ),
    _c("source", "string", "1", "citation, or all"),
    _c("rows", "int64", "1", "rows predicted"),
    *ape_summary(" of bus bandwidth"),
)
