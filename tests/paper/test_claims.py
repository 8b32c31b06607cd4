"""The paper's headline claims, reproduced with the documented paper setup.

Fernandez et al. (arXiv 2411.13055): from 128 to 2,048 H100 GPUs (Llama-2 7B, FSDP, fixed global
batch) per-GPU throughput falls 37.22 % and power per GPU 5.87 %; MFU is 59.67 % on A100 and
40.77 % on H100; at 2,048 GPUs tensor/pipeline parallelism of degree 2-4 beats pure FSDP.
Tolerances are the issue's: ±5 points (throughput drop, MFU), ±2 points (power drop).
The setup is fixed by rule in trainscale.paper.setup, not fitted to these numbers, and no
parameter is fitted to any of them: the power drop is a prediction from the sourced GPU-board
power fractions (exposed communication at idle power), checked against the paper.

The throughput drop was a strict xfail until the calibration set held the paper's own network:
fitted to its nccl-tests all-reduce scan (4 to 512 nodes), NCCL's latency scale is measured rather
than set by its prior, and the drop reproduces (README, "What it finds").
"""

from __future__ import annotations

import pytest

from trainscale.paper import setup as ss
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import load_catalogue

PAPER_DROP_PCT = 37.22
PAPER_POWER_DROP_PCT = 5.87
#: The shipped catalogues every claim is simulated with.
SHIPPED = {"catalogue": load_catalogue()}


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return load_calibration()


def test_per_gpu_throughput_drop_128_to_2048(calibration: Calibration) -> None:
    assert ss.throughput_drop_pct(calibration, **SHIPPED) == pytest.approx(PAPER_DROP_PCT, abs=5.0)


def test_throughput_drop_is_diminishing_returns_from_communication(
    calibration: Calibration,
) -> None:
    # What does reproduce: per-GPU throughput falls by a quarter or more from 128 to 2,048 GPUs
    # and the exposed-communication share of the step grows several-fold.
    assert ss.throughput_drop_pct(calibration, **SHIPPED) > 20.0
    frame = ss.scaleout(calibration, gpu_counts=(128, 2048), **SHIPPED).set_index("num_gpus")
    assert frame.loc[2048, "exposed_comm_frac"] > 2 * frame.loc[128, "exposed_comm_frac"]


@pytest.mark.xfail(
    strict=True,
    reason="prediction, not a target: with exposed communication at idle power (sourced) the "
    "simulated drop is about 25 %, the paper measured 5.87 % (docs/accuracy.md, power section)",
)
def test_power_per_gpu_drop_128_to_2048(calibration: Calibration) -> None:
    assert ss.power_drop_pct(calibration, **SHIPPED) == pytest.approx(PAPER_POWER_DROP_PCT, abs=2.0)


def test_power_claim_is_predicted_from_the_sourced_fraction(calibration: Calibration) -> None:
    """No power parameter is fitted: power_comm_frac is its sourced default, and the predicted
    drop moves with it (exposed communication drawing more power shrinks the drop)."""
    from dataclasses import replace

    from trainscale.sim.parameters import parameter_spec

    spec = parameter_spec("power_comm_frac")
    assert not spec.fitted and calibration.power_comm_frac == spec.default
    predicted = ss.power_drop_pct(calibration, **SHIPPED)
    hotter = ss.power_drop_pct(replace(calibration, power_comm_frac=0.5), **SHIPPED)
    assert predicted > hotter > 0.0


@pytest.mark.parametrize(("gpu", "study_mfu"), [("a100-sxm-80gb", 59.67), ("h100-sxm-80gb", 40.77)])
def test_mfu_by_generation(calibration: Calibration, gpu: str, study_mfu: float) -> None:
    assert 100 * ss.mfu_at(gpu, calibration, **SHIPPED) == pytest.approx(study_mfu, abs=5.0)


@pytest.mark.parametrize("model", ["llama2-7b", "llama2-70b"])
def test_model_parallel_degree_2_to_4_beats_fsdp_at_2048(
    calibration: Calibration, model: str
) -> None:
    plans = ss.best_model_parallel(model, 2048, calibration, **SHIPPED)
    fsdp = plans[plans["model_parallel"] == 1]["tokens_per_s"].max()
    degree_2_to_4 = plans[plans["model_parallel"].isin([2, 4])]["tokens_per_s"].max()
    assert degree_2_to_4 > fsdp
    assert plans.iloc[0]["model_parallel"] in (2, 4)


def test_drop_depends_on_the_assumed_global_batch(calibration: Calibration) -> None:
    # A larger global batch gives each of the 2,048 GPUs more work per collective: the drop shrinks
    # until the collectives hide and only the wait for the slowest GPU is left.
    drops = [
        ss.throughput_drop_pct(calibration, global_batch=b, **SHIPPED) for b in (2048, 8192, 32768)
    ]
    assert drops[0] > drops[1] + 10.0
    assert drops[1] + 0.01 >= drops[2] >= 0.0
