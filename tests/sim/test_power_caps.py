"""Power caps: node power follows the cap, GPU-board energy per token falls with it, node energy
per token has its minimum at a cap between idle and the TDP (the host's share), and the CLI names
that cap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.cli import main
from trainscale.sim.calibration import load_calibration
from trainscale.sim.energy import load_power_terms
from trainscale.sim.energy.caps import cap_sweep, default_caps, lowest_energy_caps

_PLAN = {
    "model": "llama2-70b", "seq_len": 4096, "global_batch": 1024, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 1024, "tp": 4, "pp": 4, "sharding": "zero1",
    "recompute": "none", "precision": "bf16", "framework": "megatron",
}  # fmt: skip


@pytest.fixture(scope="module")
def sweep(catalogue) -> pd.DataFrame:
    return cap_sweep(pd.DataFrame([_PLAN]), None, catalogue=catalogue,
                     calibration=load_calibration(), terms=load_power_terms())  # fmt: skip


def test_default_caps_run_from_above_idle_to_the_tdp():
    caps = default_caps(144.0, 700.0)
    assert caps[0] == 175.0 and caps[-1] == 700.0 and np.all(np.diff(caps) == 25.0)


def test_node_power_and_throughput_rise_with_the_cap(sweep):
    ordered = sweep.sort_values("power_limit_w")
    assert np.all(np.diff(ordered["node_power_w"]) >= 0)
    assert np.all(np.diff(ordered["tokens_per_s_per_gpu"]) >= 0)
    assert np.all(ordered["power_w_per_gpu"] <= ordered["power_limit_w"] + 1e-9)


def test_node_energy_per_token_is_lowest_between_idle_and_tdp(sweep):
    ordered = sweep.sort_values("power_limit_w").reset_index(drop=True)
    node = ordered["energy_j_per_token_node"]
    best = lowest_energy_caps(sweep, "node").iloc[0]
    assert ordered["power_limit_w"].iloc[0] < best["power_limit_w"] < 700.0
    assert best["energy_j_per_token_node"] == node.min()
    # the host's share: at the lowest cap the node spends more per token than at the optimum,
    # while the GPU board alone is cheapest far below the TDP
    assert node.iloc[0] > best["energy_j_per_token_node"]
    assert node.iloc[-1] > best["energy_j_per_token_node"]
    gpu_best = lowest_energy_caps(sweep, "gpu").iloc[0]
    assert gpu_best["power_limit_w"] < best["power_limit_w"]


def test_predict_names_the_lowest_energy_cap(capsys):
    args = ["predict", "--model", "llama2-70b", "--gpu", "h100-sxm-80gb", "--num-gpus", "1024",
            "--tp", "4", "--pp", "4", "--sharding", "zero1", "--framework", "megatron",
            "--global-batch", "1024", "--micro-batch", "1", "--seq-len", "4096",
            "--power-caps", "300,350,400,700"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    (line,) = [x for x in text.splitlines() if x.startswith("lowest node energy per token")]
    assert "W cap" in line and "80 % interval" in line and "throughput" in line
    assert sum("<- lowest" in x for x in text.splitlines()) >= 1
