"""Benchmark: configurations per second of `trainscale.predict` on one core.

Generates 100,000 valid configurations (a cross of models, GPUs, GPU counts and plans, each with
one of the three framework profiles and a random share of behaviour overrides, built in memory:
no file I/O), predicts them once to warm up, then times `repeats` calls and prints
the best and median rate. Every call computes the 80 % intervals and the `extrapolation`
column (out-of-support flags, trainscale.sim.support); the share of rows with a flag is printed.
A second table of as many mixture-of-experts rows (:func:`moe_configurations`: MoE, MLA and
wide-head catalogue models with expert parallelism, routing and dispatcher choices) is timed the
same way, and the ratio of its rate to the dense rate is printed (the target: at least 60 %).
Run: `python benchmarks/predict_speed.py [--rows N] [--repeats R]`.
Pin to one core with `taskset -c 0` to measure "one core".
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
import pandas as pd

from trainscale import predict
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue


def configurations(rows: int, seed: int = 0) -> pd.DataFrame:
    """`rows` valid configurations, sampled reproducibly from a grid of plans."""
    models = ["llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b"]
    gpus = ["a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200", "v100-sxm-32gb"]
    grid = []
    for model, gpu, dp, tp, pp, sharding, recompute in itertools.product(
        models, gpus, [1, 2, 4, 8, 16, 32, 64, 128, 256], [1, 2, 4, 8], [1, 2, 4],
        ["ddp", "zero1", "zero2", "fsdp", "hsdp"], ["none", "selective", "full"],
    ):  # fmt: skip
        if sharding == "hsdp" and dp == 1:
            continue
        grid.append((model, gpu, dp * tp * pp, tp, pp, sharding, recompute, dp))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(grid), size=rows)
    columns = list(zip(*[grid[i] for i in picks], strict=True))
    dp = np.array(columns[7])
    micro = rng.choice([1, 2, 4], size=rows)
    accum = rng.choice([1, 2, 4, 8], size=rows)
    sharding = np.array(columns[5])
    overlap = rng.choice(np.array([True, False, None], dtype=object), size=rows, p=[0.1, 0.1, 0.8])
    framework = rng.choice(["megatron", "deepspeed", "pytorch"], size=rows)
    # DeepSpeed's pipeline engine refuses ZeRO-2/3: those plans run on the pytorch profile.
    refused = (framework == "deepspeed") & (np.array(columns[4]) > 1)
    refused &= np.isin(sharding, ["zero2", "fsdp", "hsdp"])
    framework[refused] = "pytorch"
    return pd.DataFrame(
        {
            "model": columns[0], "gpu": columns[1], "num_gpus": columns[2], "tp": columns[3],
            "pp": columns[4], "sharding": sharding, "recompute": columns[6],
            "seq_len": rng.choice([2048, 4096, 8192], size=rows), "micro_batch": micro,
            "global_batch": dp * micro * accum, "precision": "bf16",
            "framework": framework,
            "overlap_grad_reduce": overlap,
        }
    )  # fmt: skip


def moe_configurations(rows: int, seed: int = 0) -> pd.DataFrame:
    """`rows` valid mixture-of-experts configurations (Megatron-Core's layout rules: num_gpus
    divisible by pp·ep·etp), sampled reproducibly: seven catalogue models with dense leading
    blocks, shared experts, MLA and wide heads among them, three GPUs, ep 1 to 8, etp 1 or tp,
    the three routings and dispatchers."""
    models = ["mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b", "qwen3-30b-a3b",
              "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b"]  # fmt: skip
    heads = {key: shape.heads for key, shape in load_catalogue().models.items()}
    grid = []
    for model, gpu, dp, tp, pp, ep, same_etp, recompute in itertools.product(
        models, ["h100-sxm-80gb", "h200-sxm-141gb", "b200"], [1, 2, 4, 8, 16, 32, 64, 128],
        [1, 2, 4, 8], [1, 2, 4], [1, 2, 4, 8], [False, True], ["none", "selective", "full"],
    ):  # fmt: skip
        etp = tp if same_etp else 1
        if (dp * tp) % (ep * etp) == 0 and heads[model] % tp == 0:
            grid.append((model, gpu, dp * tp * pp, tp, pp, ep, etp, recompute, dp))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(grid), size=rows)
    columns = list(zip(*[grid[i] for i in picks], strict=True))
    micro = rng.choice([1, 2, 4], size=rows)
    routing = rng.choice(["dropless", "balanced", "capacity"], size=rows)
    return pd.DataFrame(
        {
            "model": columns[0], "gpu": columns[1], "num_gpus": columns[2], "tp": columns[3],
            "pp": columns[4], "ep": columns[5], "etp": columns[6], "recompute": columns[7],
            "sharding": rng.choice(["zero1", "ddp"], size=rows),
            "seq_len": rng.choice([2048, 4096, 8192], size=rows), "micro_batch": micro,
            "global_batch": np.array(columns[8]) * micro * rng.choice([1, 2, 4, 8], size=rows),
            "precision": "bf16", "framework": "megatron", "moe_routing": routing,
            "capacity_factor": np.where(routing == "capacity", 1.25, np.nan),
            "moe_dispatcher": rng.choice(["alltoall", "allgather", "deepep"], size=rows),
        }
    )  # fmt: skip


def _rate(frame: pd.DataFrame, repeats: int, calibration) -> tuple[float, float, pd.DataFrame]:
    """Best and median seconds of ``repeats`` predictions of ``frame`` (after one warm-up)."""
    predict(frame.head(1000), calibration=calibration)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = predict(frame, calibration=calibration)
        times.append(time.perf_counter() - start)
    assert len(result) == len(frame)
    assert result["tokens_per_s_per_gpu_lo"].notna().all(), "intervals were not computed"
    return min(times), statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    calibration = load_calibration()
    best, median, result = _rate(configurations(args.rows), args.repeats, calibration)
    flagged = float((result["extrapolation"] != "").mean())
    print(f"rows                 {args.rows}")
    print(f"best                 {best:.3f} s  ->  {args.rows / best:,.0f} configurations/s")
    rate = args.rows / median
    print(f"median of {args.repeats:<2}         {median:.3f} s  ->  {rate:,.0f} configurations/s")
    print(f"per configuration    {1e6 * best / args.rows:.2f} us")
    print(f"flagged rows         {100 * flagged:.1f} % (extrapolation column not empty)")
    moe_best, moe_median, moe = _rate(moe_configurations(args.rows), args.repeats, calibration)
    assert (moe["alltoall_s"] > 0).any(), "no MoE row exchanged tokens"
    moe_rate = args.rows / moe_median
    print(
        f"MoE rows best        {moe_best:.3f} s  ->  {args.rows / moe_best:,.0f} configurations/s"
    )
    print(f"MoE median of {args.repeats:<2}     {moe_median:.3f} s  ->  {moe_rate:,.0f} "
          f"configurations/s, {100 * moe_rate / rate:.0f} % of the dense rate")  # fmt: skip


if __name__ == "__main__":
    main()
