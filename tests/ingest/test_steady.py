"""Tests of trainscale.ingest.steady: warm-up removal, medians and interquartile ranges.

Reference: ../shared/reference/log-formats.md §0 "Warm-up" (Megatron golden values: 7.62 s at
step 1, about 0.087 s later). The golden-values numbers below are the sample file's
``iteration-time`` values: steps 5-50 sorted are 0.0863, 0.08652, 0.08664, 0.08674, 0.08692,
0.087, 0.08732, 0.08763, 0.08878, 0.10355, so the median is (0.08692 + 0.087) / 2 and, with
numpy's linear interpolation, q25 = 0.08664 + 0.25 * 0.0001 and q75 = 0.08732 + 0.75 * 0.00031.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.ingest.hta import step_breakdown
from trainscale.ingest.kineto import load_traces
from trainscale.ingest.steady import steady_state, steady_trace_steps
from trainscale.ingest.steplog import parse_step_log

from ._samples import MEGATRON_GOLDEN, NCCL_PARSER_CONFIG, sample_file


def test_golden_values_drop_the_warm_up_step():
    summary = steady_state(parse_step_log(sample_file(MEGATRON_GOLDEN)))
    assert (summary.n_steps, summary.warmup_steps) == (10, 1)
    assert (summary.first_step, summary.last_step) == (5, 50)
    assert summary.first_line is None and summary.last_line is None
    assert summary.step_time_s == pytest.approx((0.08692 + 0.087) / 2, rel=1e-12)
    q25, q75 = 0.08664 + 0.25 * 0.0001, 0.08732 + 0.75 * 0.00031
    assert summary.step_time_s_iqr == pytest.approx(q75 - q25, rel=1e-9)
    assert math.isnan(summary.mfu) and math.isnan(summary.power_w_per_gpu_iqr)
    assert summary.to_dict()["n_steps"] == 10


def test_without_warm_up_the_first_step_counts():
    summary = steady_state(parse_step_log(sample_file(MEGATRON_GOLDEN)), warmup_steps=0)
    # 11 values: 7.61967 is the largest, the median is the 6th smallest, 0.087.
    assert summary.n_steps == 11
    assert summary.step_time_s == 0.087


def test_nan_values_are_ignored_and_lines_reported():
    steps = pd.DataFrame(
        {
            "step": [1, 2, 3, 4, 5],
            "line": pd.array([10, 20, 30, 40, 50], dtype="Int64"),
            "step_time_s": [9.0, 1.0, np.nan, 3.0, 2.0],
            "mfu": [0.1, 0.4, 0.5, np.nan, 0.6],
        }
    )
    summary = steady_state(steps, warmup_steps=1)
    assert (summary.first_line, summary.last_line) == (20, 50)
    assert summary.step_time_s == 2.0
    assert summary.step_time_s_iqr == pytest.approx(2.5 - 1.5)
    assert summary.mfu == 0.5
    assert math.isnan(summary.loss)


@pytest.mark.parametrize("warmup", [-1, 5])
def test_bad_warm_up(warmup):
    steps = pd.DataFrame({"step": [1, 2], "step_time_s": [1.0, 2.0]})
    with pytest.raises(TrainscaleError):
        steady_state(steps, warmup_steps=warmup)


def test_trace_steps_per_rank():
    breakdown = step_breakdown(load_traces([sample_file(NCCL_PARSER_CONFIG)]))
    summary = steady_trace_steps(breakdown)
    row = summary.iloc[0]
    assert (row["rank"], row["n_steps"], row["first_step"], row["last_step"]) == (0, 2, 4, 5)
    # two steps: the median is their mean, the IQR half their difference
    comm = breakdown["comm_us"].to_numpy()
    assert row["comm_us"] == comm.mean()
    assert row["comm_us_iqr"] == pytest.approx(abs(comm[1] - comm[0]) / 2)
    later = steady_trace_steps(breakdown, warmup_steps=1).iloc[0]
    assert (later["n_steps"], later["first_step"], later["comm_us"]) == (1, 5, comm[1])
