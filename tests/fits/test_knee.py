"""The knee of a scale-out series: flat then a cliff, a slow slide, and no knee."""

from __future__ import annotations

import numpy as np
import pandas as pd

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
