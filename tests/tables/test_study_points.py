"""The per-study points table: the winning plan of every plotted point, its runner-up and
margin, its memory headroom, and where the winning plan changes."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.sim.memory_margin import NEAR_MEMORY_FRACTION
from trainscale.study.report import ReportSpec, select_rows
from trainscale.tables.study_points import plan_text, study_points

_GIB = 2**30
SPEC = ReportSpec(
    x="num_gpus", series=("model",), facet=None, best_of=("tp", "micro_batch"),
    metrics=("tokens_per_s", "mfu"), levels={"model": ("m",)}, single_label="all rows",
)  # fmt: skip


def _row(num_gpus: int, tp: int, micro_batch: int, tokens_per_s: float, **extra) -> dict:
    return {
        "model": "m", "gpu": "g", "framework": "pytorch", "num_gpus": num_gpus, "tp": tp,
        "pp": 1, "cp": 1, "vpp": 1, "sharding": "fsdp", "recompute": "none",
        "micro_batch": micro_batch, "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": tokens_per_s / num_gpus,
        "tokens_per_s_per_gpu_lo": 0.9 * tokens_per_s / num_gpus,
        "tokens_per_s_per_gpu_hi": 1.1 * tokens_per_s / num_gpus,
        "mfu": 0.4, "mem_gib_per_gpu": 40.0, "fits_memory": True, "source": "sim",
        "calibration_id": "c", **extra,
    }  # fmt: skip


@pytest.fixture
def simulated() -> pd.DataFrame:
    return pd.DataFrame(
        [
            _row(64, 1, 1, 100.0),
            _row(64, 1, 2, 98.0),  # same tp, other micro-batch: a different plan
            _row(64, 2, 1, 90.0),
            _row(128, 1, 1, 150.0, fits_memory=False),  # fastest but does not fit
            _row(128, 2, 1, 180.0, mem_gib_per_gpu=75.0),
            _row(128, 1, 2, 160.0),
            _row(256, 2, 1, 300.0),
        ]
    )


def test_each_point_names_its_winner_runner_up_and_margin(simulated: pd.DataFrame) -> None:
    points = study_points(select_rows(simulated, SPEC), simulated, SPEC, {"g": 80 * _GIB})
    assert list(points["num_gpus"]) == [64, 128, 256]
    assert list(points["tp"]) == [1, 2, 2]
    assert list(points["micro_batch"]) == [1, 1, 1]
    assert list(points["runner_up_tokens_per_s"][:2]) == [98.0, 160.0]
    assert points["runner_up_margin_pct"][0] == pytest.approx(100 / 98 * 100 - 100)
    assert points["runner_up_plan"][1] == plan_text(simulated.iloc[5].to_dict())
    # no other plan fits at 256 GPUs: no runner-up
    assert points["runner_up_plan"][2] == "" and pd.isna(points["runner_up_margin_pct"][2])


def test_plan_changes_and_memory_headroom_are_marked(simulated: pd.DataFrame) -> None:
    points = study_points(select_rows(simulated, SPEC), simulated, SPEC, {"g": 80 * _GIB})
    assert list(points["plan_changed"]) == [False, True, False]
    assert list(points["mem_headroom_gib"]) == [40.0, 5.0, 40.0]
    assert 75.0 > NEAR_MEMORY_FRACTION * 80 > 40.0
    assert list(points["near_memory_limit"]) == [False, True, False]


def test_metrics_carry_their_intervals_global_throughput_times_gpus(
    simulated: pd.DataFrame,
) -> None:
    points = study_points(select_rows(simulated, SPEC), simulated, SPEC, {"g": 80 * _GIB})
    assert list(points["tokens_per_s_lo"]) == pytest.approx([90.0, 162.0, 270.0])
    assert list(points["tokens_per_s_hi"]) == pytest.approx([110.0, 198.0, 330.0])
    assert list(points["mfu"]) == pytest.approx([40.0] * 3)  # in %, as plotted
    assert "mfu_lo" not in points
    assert set(points["source"]) == {"simulated"}
