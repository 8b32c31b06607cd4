"""Out-of-support flags (trainscale.sim.support): the ``extrapolation`` column names each kind of
input no calibration row covers, is empty inside the data, widens the interval, and a user
calibration whose rows cover a configuration clears its flags."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.calibrate.user import _user_intervals
from trainscale.schema import column
from trainscale.sim import intervals, support
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.interval_scale import scale_factor
from trainscale.sim.quantile import PER_DOUBLING
from trainscale.sim.support_facts import CoverageFacts

FACTS = CoverageFacts(
    framework_rows=(("megatron", 40), ("deepspeed", 0), ("pytorch", 250)),
    framework_max_gpus=(("megatron", 1024), ("pytorch", 512)),
    gpus_with_data=("a100-sxm-80gb", "h100-sxm-80gb"),
    sharding_max_gpus=(
        ("megatron", "ddp", 1024),
        ("pytorch", "fsdp", 512),
        ("pytorch", "zero2", 64),
    ),
    params_b_range=(2.0, 20.0),
    seq_len_range=(2048, 8192),
    max_degrees=(("tp", 8), ("pp", 8), ("cp", 2)),
)
#: One flag: ``kind:value`` (grammar in the module docstring of trainscale.sim.support).
FLAG = re.compile(
    r"gpu:[\w.-]+|framework:\w+|\w+_ranks:\d+>\d+|params_b:[\d.e+]+[<>][\d.e+]+"
    r"|seq_len:\d+[<>]\d+|(tp|pp|cp):\d+>\d+"
)


def _config(**changes: object) -> dict:
    row = {
        "model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": 64, "seq_len": 4096,
        "global_batch": 512, "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16", "framework": "pytorch",
    }  # fmt: skip
    row.update(changes)
    return row


def _calibration(facts: CoverageFacts = FACTS):
    shipped = load_calibration()
    return replace(shipped, intervals=replace(shipped.intervals, facts=facts))


CASES = {
    "inside": (_config(), ""),
    "gpu": (_config(gpu="b200"), "gpu:b200"),
    "framework": (_config(framework="deepspeed", sharding="zero1"), "framework:deepspeed"),
    "ranks": (_config(sharding="zero2", num_gpus=256), "zero2_ranks:256>64"),
    "never_measured_pair": (_config(sharding="zero1"), "zero1_ranks:64>0"),
    "params": (_config(model="llama2-70b", tp=8, num_gpus=64), "params_b:68.5>20"),
    "params_below": (_config(model="llama2-1b"), "params_b:0.969<2"),
    "seq_len": (_config(seq_len=32768), "seq_len:32768>8192"),
    "seq_len_below": (_config(seq_len=1024), "seq_len:1024<2048"),
    "tp": (_config(tp=16, num_gpus=64), "tp:16>8"),
    "cp": (_config(cp=4, num_gpus=64), "cp:4>2"),
    "several": (
        _config(gpu="b200", sharding="zero2", num_gpus=256, seq_len=32768),
        "gpu:b200;zero2_ranks:256>64;seq_len:32768>8192",
    ),
}


@pytest.fixture(scope="module")
def flagged() -> pd.DataFrame:
    return predict(pd.DataFrame([row for row, _ in CASES.values()]), calibration=_calibration())


@pytest.mark.parametrize("case", list(CASES))
def test_the_column_names_each_kind_of_out_of_support_input(flagged: pd.DataFrame, case: str):
    got = flagged["extrapolation"].iloc[list(CASES).index(case)]
    assert got == CASES[case][1]
    assert all(FLAG.fullmatch(flag) for flag in got.split(";") if got)


def test_the_interval_widens_with_each_flag(flagged: pd.DataFrame) -> None:
    half = np.log(flagged["tokens_per_s_per_gpu_hi"] / flagged["tokens_per_s_per_gpu"])
    inside = half.iloc[0]
    for case in CASES:
        i = list(CASES).index(case)
        if case != "inside":
            assert half.iloc[i] > inside * 1.05, case
    ranks = half.iloc[list(CASES).index("ranks")]
    # zero2 at 256 GPUs: two doublings beyond its 64, none beyond pytorch's 512; times the
    # fitted scale factor of 256 against 64 GPUs
    nodes = scale_factor(np.array([64, 256]), load_calibration().intervals.scale_slope)
    assert ranks / inside == pytest.approx((1 + PER_DOUBLING * 2) * nodes[1] / nodes[0])
    never = half.iloc[list(CASES).index("never_measured_pair")]
    assert never / inside == pytest.approx(support.SHARDING_WITHOUT_DATA)
    seq = half.iloc[list(CASES).index("seq_len")]
    assert seq / inside == pytest.approx(1 + support.SHAPE_PER_DOUBLING * 2)
    several = half.iloc[list(CASES).index("several")]
    assert several / inside == pytest.approx(
        intervals.GPU_WITHOUT_DATA * 1.5 * 1.2 * nodes[1] / nodes[0]  # 256 GPUs as well
    )


def test_the_column_is_documented_and_a_string() -> None:
    assert column("extrapolation").dtype == "string"


def test_a_user_calibration_that_covers_the_configuration_clears_the_flag() -> None:
    # tp 2 keeps the 16K-token micro-batch inside the GPU's usable memory, so no memory flag
    # joins the coverage flags
    target = pd.DataFrame([_config(sharding="zero2", num_gpus=256, seq_len=16384, tp=2)])
    before = predict(target, calibration=_calibration())
    assert before["extrapolation"].iloc[0] == "zero2_ranks:256>64;seq_len:16384>8192"
    measured = predict(pd.DataFrame([_config(sharding="zero2", num_gpus=256, seq_len=16384, tp=2)]))
    calibrated = _calibration()
    # the facts as a user calibration extends them (pilot=None: the shipped quantiles, so the
    # narrowing is the cleared flags' alone, not a pilot interval model)
    calibrated = replace(
        calibrated,
        intervals=_user_intervals(
            calibrated.intervals, measured, pilot=None, catalogue=load_catalogue()
        ),
    )
    after = predict(target, calibration=calibrated)
    assert after["extrapolation"].iloc[0] == ""
    assert after["tokens_per_s_per_gpu_hi"].iloc[0] < before["tokens_per_s_per_gpu_hi"].iloc[0]


def test_the_shipped_facts_come_from_the_calibration_rows() -> None:
    facts = load_calibration().intervals.facts
    assert facts.sharding_max_gpus and facts.params_b_range and facts.seq_len_range
    assert dict(facts.max_degrees).keys() == {"tp", "pp", "cp"}
    # a ZeRO-3-style deepspeed run at 1,024 ranks is inside its calibrated 2,240: no flag
    deepspeed = dict(((f, s), m) for f, s, m in facts.sharding_max_gpus)[("deepspeed", "fsdp")]
    out = predict(pd.DataFrame([_config(framework="deepspeed", num_gpus=2 * deepspeed,
                                        global_batch=2 * deepspeed)]))  # fmt: skip
    assert f"fsdp_ranks:{2 * deepspeed}>{deepspeed}" in out["extrapolation"].iloc[0]


def test_facts_survive_the_calibration_file_round_trip() -> None:
    assert CoverageFacts.from_dict(FACTS.as_dict()) == FACTS
    old = {k: v for k, v in FACTS.as_dict().items() if k in
           ("framework_rows", "framework_max_gpus", "gpus_with_data")}  # fmt: skip
    bare = CoverageFacts.from_dict(old)
    assert bare.params_b_range is None and bare.sharding_max_gpus == ()
    out = predict(pd.DataFrame([_config(seq_len=65536)]), calibration=_calibration(bare))
    assert out["extrapolation"].iloc[0] == ""  # nothing known, nothing flagged


def test_the_breakdown_prints_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from trainscale.cli import main

    args = ["predict", "--model", "llama2-7b", "--gpu", "b200", "--num-gpus", "64"]
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("extrapolation"))
    assert "gpu:b200" in line
