"""The expert-parallel plan: ``ep``, ``etp`` (default ``tp``) and the derived ``edp``; each
framework's rules as named errors; every published MoE layout of the calibration data accepted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.errors import ConfigurationError
from trainscale.paths import data_dir
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.configs.expert_layouts import RULES
from trainscale.sim.degrees import expert_data_parallel_degree

CATALOGUE = load_catalogue()
#: moe-measurements.csv model names -> catalogue keys.
MODEL_KEYS = {
    "Mixtral 8x22B": "mixtral-8x22b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Qwen2-57B-A14B": "qwen2-57b-a14b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
}
MIXTRAL = {
    "model": "mixtral-8x22b", "gpu": "h100-sxm-80gb", "num_gpus": 128, "tp": 2, "pp": 8,
    "seq_len": 4096, "global_batch": 256, "micro_batch": 1, "sharding": "zero1",
    "recompute": "none", "precision": "bf16", "framework": "megatron", "ep": 8, "etp": 1,
}  # fmt: skip
DENSE = MIXTRAL | {"model": "llama3-70b", "ep": 1, "etp": None}


def _problems(rows: list[dict]) -> pd.DataFrame:
    _, _, rejects = build_configs(
        pd.DataFrame(rows), hardware=CATALOGUE.hardware, models=CATALOGUE.models,
        frameworks=CATALOGUE.frameworks, skip_invalid=True,
    )  # fmt: skip
    return rejects


def _published_rows() -> list[dict]:
    table = pd.read_csv(data_dir() / "published" / "moe-measurements.csv")
    rows = []
    for _, r in table.iterrows():
        key = next((k for name, k in MODEL_KEYS.items() if r["model"] == name), None)
        key = key or ("mixtral-8x22b-g8t8" if "G8T8" in r["model"] else "llama3-8x70b")
        sharding = "fsdp" if str(r["sharding"]).startswith("fsdp") else "zero1"
        framework = "pytorch" if str(r["framework"]).startswith("pytorch") else "megatron"
        rows.append({
            "model": key, "gpu": r["gpu"], "num_gpus": r["num_gpus"], "tp": r["tp"],
            "pp": r["pp"], "cp": r["cp"], "ep": r["ep"], "etp": r["etp"],
            "seq_len": r["seq_len"], "global_batch": r["global_batch"], "micro_batch": 1,
            "sharding": sharding, "recompute": "none", "precision": "bf16",
            "framework": framework,
        })  # fmt: skip
    return rows


def test_every_published_moe_layout_passes_the_plan_rules_and_is_predicted() -> None:
    """The 45 runs of moe-measurements.csv ran: their layouts break no rule, and the step-time
    model predicts each of them (a positive throughput, the exchange counted where ep > 1)."""
    rows = _published_rows()
    assert len(rows) == 45
    assert _problems(rows).empty
    result = predict(pd.DataFrame(rows))
    assert (result["tokens_per_s_per_gpu"] > 0).all()
    assert ((result["alltoall_s"] > 0) == (result["ep"] > 1)).all()
    assert (result["exposed_alltoall_s"] <= result["alltoall_s"]).all()


@pytest.mark.parametrize(
    ("change", "column", "rule"),
    [
        ({"ep": 3, "num_gpus": 96}, "ep", "experts_divisible"),
        ({"ep": 8, "etp": 4, "num_gpus": 128, "pp": 8}, "ep", "folding"),
        ({"sequence_parallel": False}, "ep", "ep_tp_sequence_parallel"),
        ({"etp": 3}, "etp", "expert_ffn_divisible"),
        ({"framework": "pytorch", "sharding": "fsdp", "tp": 4, "etp": 2}, "ep", "titan_etp"),
        ({"framework": "pytorch", "sharding": "fsdp", "cp": 16, "pp": 1, "tp": 1, "ep": 8},
         "ep", "titan_borrow"),
        ({"framework": "pytorch", "sharding": "hsdp", "pp": 1, "ep": 16, "etp": 1, "tp": 1,
          "model": "mixtral-8x22b-g8t8"}, "ep", "titan_borrow"),
        ({"framework": "deepspeed", "sharding": "zero1", "num_gpus": 64, "ep": 8, "tp": 2,
          "pp": 8, "etp": 2}, "ep", "deepspeed_ep"),
    ],
)  # fmt: skip
def test_each_rule_is_a_named_error(change: dict, column: str, rule: str) -> None:
    rejects = _problems([MIXTRAL | change])
    mine = rejects[rejects["column"] == column]
    assert mine["reason"].str.endswith(RULES[rule]).any(), rejects["reason"].tolist()


def test_fsdp2_borrows_from_the_whole_data_parallel_degree() -> None:
    """The HSDP row above breaks the rule (8 shards per node, ep 16); the same with FSDP does not
    (128 shards)."""
    row = MIXTRAL | {"framework": "pytorch", "sharding": "fsdp", "pp": 1, "ep": 16, "etp": 1,
                     "tp": 1, "model": "mixtral-8x22b-g8t8"}  # fmt: skip
    assert _problems([row]).empty


@pytest.mark.parametrize(("change", "column"), [({"ep": 2}, "ep"), ({"etp": 1}, "etp")])
def test_expert_parallelism_of_a_dense_model_is_refused(change: dict, column: str) -> None:
    with pytest.raises(ConfigurationError, match=f"column '{column}'.*mixture-of-experts model"):
        predict(pd.DataFrame([DENSE | change]))


def test_dense_plans_resolve_ep_1_etp_tp_and_edp() -> None:
    rows = [DENSE, DENSE | {"cp": 2, "num_gpus": 256}]
    result = predict(pd.DataFrame(rows))
    assert result["ep"].tolist() == [1, 1] and result["etp"].tolist() == [2, 2]
    # edp = num_gpus / (pp·ep·etp): dp·cp for a dense plan
    assert result["edp"].tolist() == (result["dp"] * result["cp"]).tolist() == [8, 16]


def test_expert_data_parallel_degree() -> None:
    # Parallel Folding Table 3: 128 GPUs, PP 8, EP 8, ETP 1 -> expert-DP 2; EP 4, ETP 2 -> 2
    got = expert_data_parallel_degree(
        np.array([128, 128, 100]), np.array([8, 8, 8]), np.array([8, 4, 8]), np.array([1, 2, 1])
    )
    assert got.tolist() == [2, 2, 0]
