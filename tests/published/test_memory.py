"""Memory against what really ran: every published throughput configuration is admitted (fits, or
is flagged within the documented margin), the margin is the model's measured over-prediction on
the published peak-memory figures, and the memory terms follow their cited closed forms."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from trainscale import predict
from trainscale.errors import InputFileError
from trainscale.published.accuracy import throughput_predictions
from trainscale.published.measurements import load_published
from trainscale.published.memory import load_memory_figures, memory_accuracy, memory_summary
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.memory_margin import MEMORY_REJECT_FRACTION
from trainscale.sim.model.memory import layers_in_flight, memory_terms
from trainscale.sim.model.work import block_work
from trainscale.sim.plan.layout import layout

CATALOGUE = load_catalogue()
CALIBRATION = load_calibration()


def _place(c):
    """The configurations' layout, as predict places them."""
    return layout(c.plan.tp, c.plan.cp, c.plan.dp, c.plan.sharding, c.system.gpus_per_node)


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    data = load_published(
        hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
    )
    results, rejects = throughput_predictions(data, CALIBRATION, CATALOGUE)
    assert rejects.empty
    return results


def test_no_published_throughput_configuration_is_rejected(published: pd.DataFrame) -> None:
    assert len(published) == 291
    rejected = published[~published["fits_memory"].astype(bool)]
    assert rejected.empty, rejected[["csv_row", "citation", "mem_gib_per_gpu"]].to_string()
    hbm = published["gpu"].map(lambda g: CATALOGUE.hardware.gpus[g].hbm_bytes / 2**30)
    over = published["mem_gib_per_gpu"] > CALIBRATION.memory_usable_fraction * hbm
    flagged = published["extrapolation"].fillna("").str.contains("memory:")
    assert over.any()
    assert (flagged == over).all()


def test_the_margin_is_the_largest_over_prediction_of_published_memory(
    published: pd.DataFrame,
) -> None:
    accuracy = memory_accuracy(published, load_memory_figures())
    largest = accuracy["error_pct"].max() / 100.0
    assert largest > 0
    assert math.ceil(largest * 100) / 100 == pytest.approx(MEMORY_REJECT_FRACTION - 1.0)
    summary = memory_summary(accuracy)
    assert summary["rows"].sum() == len(accuracy) == 18


def test_memory_figures_refuse_a_bad_value(tmp_path: Path) -> None:
    text = (Path(__file__).parents[2] / "data" / "published" / "memory.csv").read_text()
    bad = tmp_path / "memory.csv"
    bad.write_text(text.replace("\n32,82.4,", "\n32,lots,", 1))
    with pytest.raises(InputFileError, match=r"memory\.csv: line 2: .*'lots'"):
        load_memory_figures(bad)


def _terms(c):
    """The memory terms of built configurations ``c`` with the shipped calibration."""
    work = block_work(c.model, c.plan, c.stack)
    return memory_terms(c.model, c.plan, c.stack, c.system, work, _place(c), CALIBRATION)


def _row(**overrides: object) -> dict:
    row = {
        "model": "llama3-70b", "seq_len": 8192, "global_batch": 128, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 4, "pp": 8, "sharding": "ddp",
        "recompute": "none", "precision": "bf16", "framework": "megatron",
    }  # fmt: skip
    row.update(overrides)
    return row


def test_megatron_distributed_optimizer_holds_six_plus_twelve_over_d_bytes() -> None:
    # Megatron-Core docs (dist_optimizer.md): bf16 params with fp32 grads, 6 + 12/d bytes per
    # parameter with the distributed optimizer. ddp and zero1 rows hold the same under the megatron
    # profile; PyTorch's ddp holds 16 bytes.
    rows = [_row(), _row(sharding="zero1"), _row(framework="pytorch", vpp=1)]
    mem = predict(pd.DataFrame(rows))["mem_gib_per_gpu"].to_numpy()
    assert mem[0] == pytest.approx(mem[1], rel=1e-12)
    assert mem[2] > mem[0]


def test_pipeline_stages_hold_megatrons_warm_up_and_logits_live_on_the_last() -> None:
    # Megatron-Core's interleaved schedule: the first of pp=8 stages with vpp=5 holds
    # vpp*pp + pp - 1 = 47 chunks of 2 blocks, the last (vpp-1)*pp + 1 = 33; 1F1B: pp and one
    # micro-batch of the stage's 10 blocks.
    rows = pd.DataFrame([_row(vpp=5), _row(vpp=1)])
    configs, valid, _ = build_configs(
        rows, hardware=CATALOGUE.hardware, models=CATALOGUE.models,
        frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    assert list(valid) == [0, 1]
    first, last = layers_in_flight(configs.model.layers, configs.plan)
    assert first.tolist() == [94.0, 80.0]
    assert last.tolist() == [66.0, 10.0]
    terms = _terms(configs)
    # the first stage peaks here, and it holds no logits
    assert terms.logits.tolist() == [0.0, 0.0]
    one_stage, _, _ = build_configs(
        pd.DataFrame([_row(pp=1, num_gpus=8, tp=8, global_batch=8)]),
        hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    single = _terms(one_stage)
    assert single.logits[0] == pytest.approx(6 * 8192 * 128256 / 8)
    assert single.total[0] == pytest.approx(
        single.states[0] + single.gathered[0] + single.activations[0] + single.logits[0]
        + single.overhead[0]
    )  # fmt: skip
