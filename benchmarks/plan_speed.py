"""Benchmark: wall time of ``trainscale plan`` for a 70B model on two GPUs and four GPU counts.

    python benchmarks/plan_speed.py [--repeats R]

Runs the library function behind the command (:func:`trainscale.commands.plan_search.plan_points`
and the knees) on the request the command line
``trainscale plan --model llama3-70b --gpu h100-sxm-80gb b200 --num-gpus 512 1024 2048 4096
--global-batch-tokens 4M --framework megatron`` makes (the default search space), after one
warm-up call, and prints the best and median seconds and the plans searched. The catalogue and
calibration load is timed separately (the command pays it once).
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainscale.commands.plan_search import plan_knees, plan_points
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.plan import PlanRequest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    catalogue, calibration = load_catalogue(), load_calibration()
    loaded = time.perf_counter() - start
    request = PlanRequest(
        model="llama3-70b", gpus=("h100-sxm-80gb", "b200"), num_gpus=(512, 1024, 2048, 4096),
        seq_len=8192, global_batch_tokens=4 * 2**20, framework="megatron",
    )  # fmt: skip
    result = plan_points(request, catalogue=catalogue, calibration=calibration)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = plan_points(request, catalogue=catalogue, calibration=calibration)
        plan_knees(result)
        times.append(time.perf_counter() - start)
    print(f"catalogue and calibration load: {loaded:.2f} s")
    print(f"plans that fit: {len(result.simulated):,}; points: {len(result.points)}")
    print(f"plan search: best {min(times):.2f} s, median {statistics.median(times):.2f} s "
          f"over {args.repeats} runs")  # fmt: skip


if __name__ == "__main__":
    main()
