"""A benchmark run's whole timed window: training steps plus the evaluations its rules require
(trainscale.sim.energy.run), and the metered MLPerf LoRA row predicted over that window."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainscale.sim.energy.run import (
    MLPERF_EVALUATIONS,
    EvaluationRule,
    evaluations,
    forward_share,
    run_tokens_per_s,
)

LORA = MLPERF_EVALUATIONS["llama2_70b_lora"]


def test_forward_share_follows_the_flops_of_each_pass():
    # forward 2 FLOPs per weight per token; backward 4 (2 under LoRA); full recompute +2
    share = forward_share([False, True, False, True], [False, False, True, True])
    assert share == pytest.approx([1 / 3, 1 / 2, 1 / 4, 1 / 3])


def test_mlperf_lora_evaluates_at_1920_then_every_384_samples():
    # the run stops at an evaluation: 1,920, 2,304, 2,688, 3,072, 3,456
    runs = [1919, 1920, 2303, 2688, 3072, 3456]
    assert evaluations(runs, LORA).tolist() == [0, 1, 1, 3, 4, 5]
    assert (LORA.every_samples, LORA.first_samples, LORA.eval_samples) == (384, 1920, 173)
    assert "eval_samples 173" in LORA.source and "VAL_CHECK_INTERVAL=384" in LORA.source


def test_a_run_without_evaluations_is_the_steady_state():
    never = EvaluationRule(every_samples=100, first_samples=10**9, eval_samples=50, source="-")
    tps = run_tokens_per_s(step_time_s=2.0, global_batch=8, seq_len=4096, run_samples=800,
                           rule=never, share=0.5)  # fmt: skip
    assert tps == pytest.approx(8 * 4096 / 2.0)


def test_evaluation_passes_add_forward_work_per_global_batch():
    # 3,456 samples at global batch 8: 432 steps; 5 evaluations of ceil(173/8) = 22 forward
    # passes each at half a LoRA step
    step, batch, seq = 0.5, 8, 8192
    tps = run_tokens_per_s(step_time_s=step, global_batch=batch, seq_len=seq, run_samples=3456,
                           rule=LORA, share=0.5)  # fmt: skip
    seconds = 432 * step + 5 * math.ceil(173 / 8) * 0.5 * step
    assert tps == pytest.approx(3456 * seq / seconds)
    assert tps < batch * seq / step


def test_the_metered_lora_row_is_predicted_over_its_whole_run(catalogue):
    from trainscale.calibrate.power import power_predictions
    from trainscale.paths import data_dir
    from trainscale.published.power_rows import load_power_rows
    from trainscale.published.sources import load_sources
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.energy.terms import load_power_terms

    published = data_dir() / "published"
    sources = load_sources(published / "sources.yaml", frameworks=catalogue.framework_keys)
    rows = load_power_rows(published / "power-measurements.csv", catalogue, sources).rows
    lora = rows[rows["benchmark"].eq("llama2_70b_lora")]
    assert len(lora) == 2
    # total tokens 257,949,696 over 10 runs of 8,192-token sequences (the row's notes)
    assert lora["run_samples"].tolist() == pytest.approx([257949696 / 10 / 8192] * 2)
    gpt3 = rows[rows["benchmark"].eq("gpt3")]
    assert gpt3["run_samples"].tolist() == pytest.approx([288 * 2048] * len(gpt3))
    out = power_predictions(rows, load_calibration(), catalogue, load_power_terms())
    steady = out["tokens_per_s_per_gpu"].to_numpy()
    run = out["run_tokens_per_s_per_gpu"].to_numpy()
    is_lora = out["benchmark"].eq("llama2_70b_lora").to_numpy()
    # 3,148.8 samples: 4 evaluations of 22 half-step passes over 393.6 steps
    assert run[is_lora] == pytest.approx(steady[is_lora] * 393.6 / (393.6 + 4 * 22 * 0.5))
    # no evaluation rule known for gpt3: the steady state
    assert np.array_equal(run[~is_lora], steady[~is_lora])
    # node energy per token is node power over the whole run's throughput
    energy = out[out["metric"].eq("energy_j_per_token") & is_lora].iloc[0]
    assert energy["predicted"] == pytest.approx(
        energy["node_power_w"] * 8 / (energy["run_tokens_per_s_per_gpu"] * 64)
    )
