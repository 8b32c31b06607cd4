"""The knee of a scale-out series: flat then a cliff, a slow slide, and no knee."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.fits.knee import KNEE_COLUMNS, knee, knee_of_series


def _series(per_gpu: list[float], **extra: list[float]) -> pd.DataFrame:
    gpus = np.array([128, 256, 512, 1024, 2048, 4096][: len(per_gpu)], dtype=float)
    return pd.DataFrame({"num_gpus": gpus, "tokens_per_s": gpus * np.array(per_gpu), **extra})


def test_a_batch_driven_cliff_is_the_knee_not_smoothed_over() -> None:
    # flat to 1,024 GPUs (-1 %), then -27 % at 4,096: the knee is where per-GPU throughput first
    # falls 10 % below its best
    rows = _series([1000, 1000, 995, 990, 930, 730])
    found = knee_of_series(rows)
    assert found["knee_x"] == 4096
    assert found["knee_criterion"] == "per_gpu"
    assert found["best_x"] == 128
    assert found["per_gpu_drop_pct"] == 27.0


def test_a_doubling_that_buys_less_than_half_a_gpu_is_the_knee() -> None:
    # with the per-GPU criterion at 50 % only the marginal one applies: the step from 256 to 512
    # GPUs adds (512*700 - 256*1000)/256 = 400 tokens/s per added GPU, 40 % of the 1,000 each GPU
    # gave before: below half
    rows = _series([1000, 1000, 700])
    found = knee_of_series(rows, fraction=0.5)
    assert found["knee_x"] == 512
    assert found["knee_criterion"] == "marginal"
    assert round(found["marginal_pct"]) == 40


def test_the_cause_is_what_grew_most_and_a_flat_series_has_no_knee() -> None:
    rows = _series(
        [1000, 990, 700], global_batch=[512, 512, 512], dp=[32, 64, 128],
        step_time_s=[1.0, 1.0, 1.0], exposed_comm_s=[0.05, 0.06, 0.30], bubble_s=[0.0, 0.0, 0.1],
    )  # fmt: skip
    found = knee_of_series(rows)
    assert found["knee_cause"] == "exposed collective"
    assert found["knee_local_batch"] == 4 and found["best_local_batch"] == 16
    flat = knee(pd.concat([_series([1000, 995, 990]).assign(gpu="a"),
                           _series([1000, 600, 500]).assign(gpu="b")]), ["gpu"])  # fmt: skip
    assert list(flat.columns) == ["gpu", *KNEE_COLUMNS]
    assert np.isnan(flat.loc[0, "knee_x"]) and flat.loc[1, "knee_x"] == 256


def test_marginal_cliffs_are_the_steps_a_smooth_fit_draws_through() -> None:
    from trainscale.fits.knee import marginal_cliffs

    gpus = np.array([256, 512, 1024, 2048], dtype=float)
    total = gpus * np.array([1000, 990, 980, 615])  # the last doubling adds 250 per added GPU
    ((n_from, n_to, share),) = marginal_cliffs(gpus, total)
    assert (n_from, n_to) == (1024, 2048)
    assert share == pytest.approx((2048 * 615 - 1024 * 980) / 1024 / 980)


def test_marginal_returns_marks_the_cliff_and_stops_the_usl_before_it() -> None:
    from trainscale.figures.marginal_returns import plot
    from trainscale.sim.model.shape import load_models

    gpus = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    per_gpu = [1000, 998, 996, 994, 990, 985, 975, 960, 600]
    sim = pd.DataFrame({
        "model": "llama2-7b", "num_gpus": gpus, "recompute": "none", "fits_memory": True,
        "tokens_per_s": [n * p for n, p in zip(gpus, per_gpu, strict=True)],
        "power_w_per_gpu": 600.0, "micro_batch": 1, "global_batch": gpus, "dp": gpus,
        "source": "sim",
        "simulator_version": "t", "calibration_id": "c",
    })  # fmt: skip
    fig = plot(sim, models=load_models())
    panel = next(a for a in fig.axes if a.get_title().endswith("per added GPU"))
    assert any(t.get_text().startswith("cliff:") for t in panel.texts)
    curve = max(panel.get_lines(), key=lambda line: len(line.get_xdata()))
    assert max(curve.get_xdata()) == pytest.approx(1024)


def test_study_fits_carry_the_knee_and_flag_the_loglog_fit_over_a_cliff() -> None:
    from trainscale.study.report import ReportSpec
    from trainscale.tables.study_fits import study_fits

    gpus = np.array([128, 256, 512, 1024, 2048, 4096])
    per_gpu = np.array([1000, 1000, 995, 990, 930, 730])
    rows = pd.DataFrame({
        "facet_label": "", "series_label": "H100", "gpu": "h100-sxm-80gb", "num_gpus": gpus,
        "tokens_per_s": gpus * per_gpu, "tokens_per_s_per_gpu": per_gpu,
        "power_w_per_gpu": 600.0, "global_batch": 512, "dp": gpus // 8, "step_time_s": 1.0,
        "exposed_comm_s": [0.05, 0.05, 0.06, 0.06, 0.10, 0.25], "bubble_s": 0.0,
        "framework": "megatron", "tp": 8, "pp": 1, "cp": 1, "vpp": 1, "sharding": "zero1",
        "recompute": "none", "micro_batch": 1, "calibration_id": "c",
    })  # fmt: skip
    spec = ReportSpec(
        x="num_gpus", series=("gpu",), facet=None, best_of=("tp",),
        metrics=("tokens_per_s_per_gpu",), levels={"gpu": ("h100-sxm-80gb",)},
    )  # fmt: skip
    table = study_fits(rows, spec)
    knee_row = table[(table["fit"] == "knee") & (table["parameter"] == "knee_gpus")].iloc[0]
    assert knee_row["estimate"] == 4096
    assert "global batch 512 sequences, 1 per data-parallel rank" in knee_row["note"]
    assert "cause exposed collective" in knee_row["note"]
    slope = table[(table["fit"] == "loglog_hc3") & (table["metric"] == "tokens_per_s_per_gpu")]
    assert slope["note"].str.contains("cliff: tokens/s per GPU changes -21.5 % per doubling").all()
