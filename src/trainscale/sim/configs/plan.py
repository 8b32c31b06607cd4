"""The interlocks of the plan: degrees, batch, sequence and hardware."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.schema import (
    Sharding,
)
from trainscale.sim.configs.columns import optional_bool
from trainscale.sim.configs.problems import Problems
from trainscale.sim.degrees import data_parallel_degree, model_parallel_degree

__all__ = ["plan_rules", "sequence_parallel"]


def sequence_parallel(frame: pd.DataFrame, tp: np.ndarray, problems: Problems) -> np.ndarray:
    values, _ = optional_bool(frame, "sequence_parallel", problems, tp > 1, "true when tp > 1")
    return values


def plan_rules(v: dict[str, np.ndarray], gpu_names: np.ndarray, problems: Problems) -> None:
    """Interlocks between degrees, batch and hardware; only rows valid so far are checked."""
    tp, pp, cp, vpp = v["tp"], v["pp"], v["cp"], v["vpp"]
    heads, kv = v["heads"], v["kv_heads"]
    ok = problems.ok_for("tp")
    problems.add_where(
        ok & (heads % tp != 0), "tp", lambda r: f"tp {tp[r]} does not divide heads {heads[r]}"
    )
    problems.add_where(
        ok & (heads % tp == 0) & (kv % tp != 0) & (tp % kv != 0), "tp",
        lambda r: f"tp {tp[r]} and kv_heads {kv[r]}: one must divide the other",
    )  # fmt: skip
    mp = model_parallel_degree(tp, pp, cp)
    problems.add_where(
        problems.ok_for("tp", "pp", "cp", "num_gpus") & (v["num_gpus"] % mp != 0), "num_gpus",
        lambda r: f"num_gpus {v['num_gpus'][r]} is not divisible by tp·pp·cp = "
        f"{tp[r]}·{pp[r]}·{cp[r]} = {mp[r]}",
    )  # fmt: skip
    dp = np.maximum(data_parallel_degree(v["num_gpus"], tp, pp, cp), 1)
    per_step = dp * v["micro_batch"]
    batch_ok = problems.ok_for("tp", "pp", "cp", "num_gpus", "global_batch", "micro_batch")
    problems.add_where(
        batch_ok & (v["global_batch"] % per_step != 0), "global_batch",
        lambda r: f"global_batch {v['global_batch'][r]} is not divisible by dp·micro_batch = "
        f"{dp[r]}·{v['micro_batch'][r]} = {per_step[r]}",
    )  # fmt: skip
    grad_accum = np.maximum(v["global_batch"] // per_step, 1)
    problems.add_where(
        problems.ok_for("cp", "seq_len") & (cp > 1) & (v["seq_len"] % (2 * cp) != 0), "seq_len",
        lambda r: f"seq_len {v['seq_len'][r]} is not divisible by 2·cp = {2 * cp[r]} "
        "(causal load balancing)",
    )  # fmt: skip
    ok = problems.ok_for("vpp", "pp")
    problems.add_where(ok & (vpp > 1) & (pp == 1), "vpp", lambda r: f"vpp {vpp[r]} needs pp > 1")
    problems.add_where(
        problems.ok_for("vpp", "pp", "global_batch") & (vpp > 1) & (pp > 1)
        & (grad_accum % pp != 0), "vpp",
        lambda r: f"interleaved 1F1B (vpp {vpp[r]}) needs grad_accum {grad_accum[r]} divisible "
        f"by pp {pp[r]}",
    )  # fmt: skip
    problems.add_where(
        ok & (v["layers"] < pp * vpp), "pp",
        lambda r: f"layers {v['layers'][r]} < pp·vpp = {pp[r]}·{vpp[r]}",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("precision", "gpu") & v["fp8"] & ~np.isfinite(v["fp8_peak"]),
        "precision",
        lambda r: f"GPU {gpu_names[r]} has no FP8 tensor cores; allowed: bf16 (16-bit mixed "
        "precision: bf16, or fp16 on a GPU without bf16 such as V100)",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("sharding", "num_gpus", "tp", "pp", "cp")
        & (v["sharding"] == Sharding.HSDP) & (dp == 1), "sharding",
        lambda r: "hsdp needs dp > 1",
    )  # fmt: skip
    v["dp"] = dp
    v["grad_accum"] = grad_accum
