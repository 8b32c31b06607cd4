"""The pilot refit rule (trainscale.calibrate.pilot), the pilot intervals
(trainscale.sim.pilot_intervals) and the source-out coverage of the pilot validation
(trainscale.calibrate.pilot_series)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.calibrate.pilot import (
    MEASURED,
    NETWORK,
    NOISE_FLOOR_PCT,
    choose,
    refit_pilots,
    sensitive_parameters,
)
from trainscale.calibrate.pilot_series import scaling_series, source_out_coverage
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.pilot_intervals import PilotIntervals, distance, fit_pilot_quantiles

CATALOGUE = load_catalogue()
PUBLISHED = load_published(
    hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
)
BASE = load_calibration()
FOUNDRY = PUBLISHED.throughput[
    PUBLISHED.throughput["citation"].str.startswith("MosaicML")
    & (PUBLISHED.throughput["gpu"] == "h100-sxm-80gb")
].rename(columns={"observed_tokens_per_s_per_gpu": MEASURED})


def _moved(calibration) -> set[str]:
    shipped = BASE.as_dict()
    return {k for k, v in calibration.as_dict().items() if v != shipped[k]}


def test_one_row_refits_one_level_only() -> None:
    calibration, report = refit_pilots(FOUNDRY.head(1), base=BASE, catalogue=CATALOGUE)
    assert list(report.ladder["rung"]) == ["level"] and report.chosen == "level"
    assert report.refitted == ("gemm_efficiency_offset_pytorch",)
    assert _moved(calibration) == {"gemm_efficiency_offset_pytorch"}
    assert report.in_sample_mape_pct < report.shipped_mape_pct


def test_rows_on_one_node_never_move_network_terms() -> None:
    """Several models on 8 GPUs (one node): no network rung, the network terms stay."""
    rows = FOUNDRY[FOUNDRY["num_gpus"] == 8]
    assert len(rows) > 1
    calibration, report = refit_pilots(rows, base=BASE, catalogue=CATALOGUE)
    assert "network" not in set(report.ladder["rung"])
    assert not _moved(calibration) & set(NETWORK)
    assert all(getattr(calibration, n) == getattr(BASE, n) for n in NETWORK)


def test_a_refit_never_changes_a_parameter_the_rows_do_not_respond_to() -> None:
    """Rows at several node counts and layouts (the whole ladder): every changed parameter is
    one the rows respond to, and no other framework's or the FP8 offset moves (no fp8 row)."""
    rows = FOUNDRY[(FOUNDRY["num_gpus"] <= 64) & (FOUNDRY["precision"] == "bf16")]
    calibration, report = refit_pilots(rows, base=BASE, catalogue=CATALOGUE)
    moved = _moved(calibration)
    assert moved == set(report.refitted)
    responding = set(sensitive_parameters(rows, BASE, tuple(sorted(moved)), CATALOGUE))
    assert moved <= responding
    assert not {n for n in moved if "megatron" in n or "deepspeed" in n or "fp8" in n}


def test_the_chosen_refit_is_the_simplest_within_noise() -> None:
    # one left-out row: the noise is the 1-point floor
    assert choose({"level": np.array([3.5]), "network": np.array([3.0])}) == (
        "level",
        NOISE_FLOOR_PCT,
    )
    assert choose({"level": np.array([5.0]), "network": np.array([4.5]), "layout": [2.0]})[0] == (
        "layout"
    )
    # a spread of errors: the margin is the best candidate's standard error
    best = np.array([1.0, 9.0, 1.0, 9.0])
    chosen, noise = choose({"level": np.array([7.0] * 4), "layout": best})
    assert noise == pytest.approx(np.std(best, ddof=1) / 2) and chosen == "level"
    assert choose({"level": np.array([9.5] * 4), "layout": best})[0] == "layout"


def test_the_ladder_is_scored_on_the_largest_scale() -> None:
    """llm-foundry's H100 rows, 8-512 GPUs, fsdp and zero2: all three rungs."""
    _, report = refit_pilots(FOUNDRY, base=BASE, catalogue=CATALOGUE)
    assert report.largest_gpus == 512
    assert list(report.ladder["rung"]) == ["level", "network", "layout"]
    scores = report.ladder.set_index("rung")["llso_mape_pct"]
    best = scores.min()
    simplest = next(r for r in scores.index if scores[r] <= best + report.noise_pct)
    assert report.chosen == simplest


def test_pilot_interval_narrows_near_the_pilots_and_widens_with_distance() -> None:
    rng = np.random.default_rng(0)
    d = np.repeat(np.arange(0.0, 7.0), 40)
    error = rng.normal(0.0, 0.02 + 0.05 * d)
    lower, upper, rows, largest = fit_pilot_quantiles(d, error, np.repeat(["a", "b"], 140))
    assert np.all(np.diff(lower) <= 0) and np.all(np.diff(upper) >= 0)
    assert lower[-1] < lower[0] < 0 < upper[0] < upper[-1]
    model = PilotIntervals((8, 64), lower, upper, rows, largest)
    gpus = np.array([8, 16, 64, 128, 1024, 8192, 2**20])
    lo, hi = model.log_factors(gpus)
    assert not np.all(np.diff(hi - lo) >= 0)  # 64 is a pilot: narrower again there
    assert hi[2] - lo[2] == hi[0] - lo[0] < hi[4] - lo[4] < hi[5] - lo[5] < hi[6] - lo[6]
    assert distance(np.array([4, 8, 24, 64, 256]), np.array([8, 64])).tolist() == pytest.approx(
        [1.0, 0.0, np.log2(3), 0.0, 2.0]
    )
    assert PilotIntervals.from_dict(model.as_dict()) == model
    grown = PilotIntervals((8, 64), lower, upper, rows, largest, growth_rate=0.2)
    assert PilotIntervals.from_dict(grown.as_dict()) == grown
    _, hi_g = grown.log_factors(np.array([16, 128]))  # one doubling from a pilot each
    assert hi_g[1] / hi_g[0] == pytest.approx(np.exp(0.2 * 3)) and hi[1] == hi[3]


def test_coverage_leaves_the_rows_source_out() -> None:
    """A source whose errors no other source shows is not covered, though its own rows would
    widen an interval fitted on them to cover it."""
    n = 30
    errors = pd.DataFrame(
        {
            "citation": ["a"] * n + ["b"] * n + ["odd"] * n,
            "log2_distance": np.tile(np.linspace(1, 4, n), 3),
            "num_gpus": np.tile(np.rint(16 * np.exp2(np.linspace(1, 4, n))), 3).astype(int),
            "observed_tokens_per_s_per_gpu": np.r_[np.full(2 * n, 100.0), np.full(n, 300.0)],
            "pilot_predicted_tokens_per_s_per_gpu": np.r_[
                100.0 * np.exp(np.tile(np.linspace(-0.05, 0.05, n), 2)), np.full(n, 100.0)
            ],
        }
    )
    # the shipped level 20 % above every pilot-calibrated prediction (the pilots help at every
    # distance, so every row is within the reach), a narrow shipped interval (+-2 %)
    observed = errors["observed_tokens_per_s_per_gpu"]
    errors = errors.assign(
        base_predicted_tokens_per_s_per_gpu=1.2 * errors["pilot_predicted_tokens_per_s_per_gpu"],
        shipped_lower_log_factor=-0.02, shipped_upper_log_factor=0.02,
    )  # fmt: skip
    for kind in ("pilot", "base"):
        predicted = errors[f"{kind}_predicted_tokens_per_s_per_gpu"]
        errors[f"{kind}_ape_pct"] = 100.0 * (predicted / observed - 1.0).abs()
    errors["weak_scaling_ape_pct"] = 10.0
    covered = source_out_coverage(errors)
    assert not covered[errors["citation"] == "odd"].any()
    assert covered[errors["citation"] != "odd"].mean() > 0.5


def test_a_series_has_one_source_stack_model_and_layout_at_two_or_more_gpu_counts() -> None:
    series = scaling_series(PUBLISHED.throughput)
    rows = PUBLISHED.throughput.assign(series=series).dropna(subset=["series"])
    for _, group in rows.groupby("series"):
        assert group["num_gpus"].nunique() >= 2
        for column in ("citation", "framework", "model_name", "gpu", "tp", "pp", "sharding"):
            values = group[column].astype(str)
            assert (values == values.iloc[0]).all()
