"""The expert-parallel degrees of every row and the layouts its framework accepts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.schema import NUMERIC_BOUNDS, SHARDINGS
from trainscale.sim.cells import numeric as _numeric
from trainscale.sim.cells import value_problem as _value_problem
from trainscale.sim.cells import within as _within
from trainscale.sim.configs.columns import missing_mask
from trainscale.sim.configs.expert_layouts import (
    RULES,
    deepspeed_breaks,
    megatron_breaks,
    torchtitan_breaks,
)
from trainscale.sim.configs.problems import Problems
from trainscale.sim.degrees import expert_data_parallel_degree

__all__ = ["expert_rules", "expert_tensor_parallel"]


def expert_tensor_parallel(frame: pd.DataFrame, tp: np.ndarray, problems: Problems) -> np.ndarray:
    """The ``etp`` column: the row's value, ``tp`` where empty (Megatron-Core's default)."""
    values = _numeric(frame, "etp")
    missing = missing_mask(frame, "etp")
    values = np.where(missing, tp.astype(np.float64), values)
    bad = ~_within(values, NUMERIC_BOUNDS["etp"])
    problems.add_where(
        bad, "etp", lambda r: _value_problem(frame, "etp", r, values[r], " (empty: tp)")
    )
    return np.where(bad, 1, values).astype(np.int64)


def _shard_degree(v: dict[str, np.ndarray], gpus_per_node: np.ndarray) -> np.ndarray:
    """torchtitan's ``dp_shard``: the data-parallel degree, or for HSDP the data-parallel ranks
    of one node (:mod:`trainscale.sim.plan.layout`: HSDP shards within a node), less ``cp``."""
    tp, cp, dp = v["tp"], v["cp"], v["dp"]
    node = np.minimum(dp * cp, np.maximum(gpus_per_node.astype(np.int64) // tp, 1))
    return np.where(v["sharding"] == SHARDINGS.index("hsdp"), np.maximum(node // cp, 1), dp)


def _add(problems: Problems, rows: np.ndarray, column: str, rule: str, detail) -> None:
    problems.add_where(rows, column, lambda r: f"{detail(r)}: {RULES[rule]}")


def expert_rules(
    v: dict[str, np.ndarray],
    gpus_per_node: np.ndarray,
    framework_keys: tuple[str, ...],
    problems: Problems,
) -> None:
    """Check the expert-parallel layout of every row still valid (the rules and their sources:
    :mod:`trainscale.sim.configs.expert_layouts`) and set ``v["edp"]``. ``gpus_per_node`` (the
    row's, else its system's) sizes HSDP's shard group, from which FSDP2 + EP borrows;
    ``framework_keys``, the framework list ``v["framework"]`` indexes, names each row's stack."""
    tp, cp, pp, dp, ep, etp = (v[k] for k in ("tp", "cp", "pp", "dp", "ep", "etp"))
    experts, expert_ffn = v["num_experts"], v["expert_ffn"]
    ok = problems.ok_for("model", "tp", "pp", "cp", "num_gpus", "ep", "etp")
    dense = experts == 0
    _add(problems, ok & dense & (ep > 1), "ep", "moe_model", lambda r: f"ep {ep[r]}")
    _add(
        problems, ok & dense & (ep == 1) & (etp != tp), "etp", "moe_model",
        lambda r: f"etp {etp[r]} differs from tp {tp[r]}",
    )  # fmt: skip
    moe = ok & ~dense
    _add(
        problems, moe & (experts % ep != 0), "ep", "experts_divisible",
        lambda r: f"ep {ep[r]} does not divide num_experts {experts[r]}",
    )  # fmt: skip
    _add(
        problems, moe & (expert_ffn % etp != 0), "etp", "expert_ffn_divisible",
        lambda r: f"etp {etp[r]} does not divide expert_ffn {expert_ffn[r]}",
    )  # fmt: skip
    framework = v["framework"]
    checks = {
        "megatron": megatron_breaks(v["num_gpus"], tp, pp, ep, etp, v["sequence_parallel"]),
        "pytorch": torchtitan_breaks(tp, cp, _shard_degree(v, gpus_per_node), ep, etp),
        "deepspeed": deepspeed_breaks(tp, dp, ep, etp),
    }
    for key, breaks in checks.items():
        if key not in framework_keys:
            continue
        mine = moe & (framework == framework_keys.index(key))
        for rule, rows in breaks.items():
            _add(
                problems, mine & rows, "ep", rule,
                lambda r: f"ep {ep[r]}, etp {etp[r]} on {v['num_gpus'][r]} GPUs (tp {tp[r]}, "
                f"pp {pp[r]}, cp {cp[r]}, dp {dp[r]}, {framework_keys[framework[r]]})",
            )  # fmt: skip
    v["edp"] = np.maximum(expert_data_parallel_degree(v["num_gpus"], pp, ep, etp), 1)
