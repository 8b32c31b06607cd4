"""Benchmark: configurations per second of `trainscale.predict` on one core.

Generates 100,000 valid configurations (a cross of models, GPUs, GPU counts and plans, each with
one of the three framework profiles and a random share of behaviour overrides, built in memory:
no file I/O), predicts them once to warm up, then times `repeats` calls and prints
the best and median rate. Every call computes the 80 % intervals and the `extrapolation`
column (out-of-support flags, trainscale.sim.support); the share of rows with a flag is printed.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    frame = configurations(args.rows)
    calibration = load_calibration()
    predict(frame.head(1000), calibration=calibration)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = predict(frame, calibration=calibration)
        times.append(time.perf_counter() - start)
    assert len(result) == args.rows
    assert result["tokens_per_s_per_gpu_lo"].notna().all(), "intervals were not computed"
    flagged = float((result["extrapolation"] != "").mean())
    best, median = min(times), statistics.median(times)
    print(f"rows                 {args.rows}")
    print(f"best                 {best:.3f} s  ->  {args.rows / best:,.0f} configurations/s")
    rate = args.rows / median
    print(f"median of {args.repeats:<2}         {median:.3f} s  ->  {rate:,.0f} configurations/s")
    print(f"per configuration    {1e6 * best / args.rows:.2f} us")
    print(f"flagged rows         {100 * flagged:.1f} % (extrapolation column not empty)")


if __name__ == "__main__":
    main()
