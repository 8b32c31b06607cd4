"""Time, energy and cost to train N tokens: arithmetic on a result, intervals, and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainscale.cli import main
from trainscale.errors import TrainscaleError
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy import load_power_terms, with_node_power
from trainscale.sim.energy.bill import parse_train_tokens, with_training_bill
from trainscale.sim.simulate import predict

_ONE = (
    "predict", "--model", "llama2-70b", "--gpu", "h100-sxm-80gb", "--num-gpus", "1024",
    "--tp", "4", "--pp", "4", "--sharding", "zero1", "--framework", "megatron",
    "--global-batch", "1024", "--micro-batch", "1", "--seq-len", "4096",
)  # fmt: skip


@pytest.fixture(scope="module")
def result(catalogue: Catalogue) -> pd.DataFrame:
    rows = pd.DataFrame([{
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 512, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": n, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    } for n in (8, 512)])  # fmt: skip
    return with_node_power(predict(rows, catalogue=catalogue), catalogue.hardware,
                           load_power_terms())  # fmt: skip


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("1T", 1e12), ("300B", 3e11), ("15m", 1.5e7), ("2.5e12", 2.5e12), ("4096", 4096.0)],
)
def test_token_counts_take_si_suffixes(text, tokens):
    assert parse_train_tokens(text) == tokens


@pytest.mark.parametrize("text", ["", "1X", "-1T", "0", "T"])
def test_a_bad_token_count_is_named(text):
    with pytest.raises(TrainscaleError, match="train tokens"):
        parse_train_tokens(text)


def test_bill_is_time_gpu_hours_energy_and_cost(result):
    bill = with_training_bill(result, 1e12, 2.5)
    seconds = 1e12 / result["tokens_per_s"]
    np.testing.assert_allclose(bill["train_days"], seconds / 86_400)
    np.testing.assert_allclose(bill["gpu_hours"], result["num_gpus"] * seconds / 3600)
    np.testing.assert_allclose(bill["cost_usd"], 2.5 * bill["gpu_hours"])
    np.testing.assert_allclose(bill["energy_mwh_gpu"], result["energy_j_per_token"] * 1e12 / 3.6e9)
    np.testing.assert_allclose(
        bill["energy_mwh_facility"], result["energy_j_per_token_facility"] * 1e12 / 3.6e9
    )
    # scopes nest: GPU board < node < facility
    assert np.all(bill["energy_mwh_gpu"] < bill["energy_mwh_node"])
    assert np.all(bill["energy_mwh_node"] < bill["energy_mwh_facility"])
    for name in ("train_days", "gpu_hours", "cost_usd", "energy_mwh_node", "energy_mwh_facility"):
        assert np.all(bill[f"{name}_lo"] < bill[name]) and np.all(bill[name] < bill[f"{name}_hi"])
    assert bill["cost_usd"].notna().all()
    assert with_training_bill(result, 1e12)["cost_usd"].isna().all()


def test_predict_prints_the_bill_with_scopes_and_intervals(capsys, tmp_path: Path):
    out = tmp_path / "one.csv"
    status = main([*_ONE, "--train-tokens", "1T", "--usd-per-gpu-hour", "2.5", "-o", str(out)])
    text = capsys.readouterr().out
    assert status == 0
    for label in ("time", "GPU-hours", "energy, node", "energy, facility", "cost"):
        (line,) = [x for x in text.splitlines() if x.startswith(f"  {label} ")]
        assert "80 % interval" in line, line
    (gpu,) = [x for x in text.splitlines() if x.startswith("  energy, GPU board")]
    assert "MWh" in gpu and "not validated" in gpu
    row = pd.read_csv(out).iloc[0]
    assert row["cost_usd"] == pytest.approx(2.5 * row["gpu_hours"])
    assert row["train_days"] == pytest.approx(1e12 / row["tokens_per_s"] / 86_400)


def test_a_price_without_tokens_is_an_error(capsys):
    assert main([*_ONE, "--usd-per-gpu-hour", "2.5"]) != 0
    assert "--train-tokens" in capsys.readouterr().err
