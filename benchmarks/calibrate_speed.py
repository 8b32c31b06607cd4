"""Benchmark: `trainscale calibrate --measurements` on two rows against one `trainscale predict`.

What a user waits for, command against command: each is a fresh `python -m trainscale.cli`
process (interpreter start, imports, catalogues and calibration read), timed from start to exit.

- **predict**: `trainscale predict --model llama3-8b --gpu h100-sxm-80gb --num-gpus 16 ...`, one
  configuration printed as a breakdown;
- **calibrate**: `trainscale calibrate --measurements two.csv -o mine.yaml` on two measured rows
  of that stack (Llama 3 8B, FSDP, 8 and 16 H100 GPUs), which refit the level and the network
  terms (two node counts) and read the pilot interval table stored with the shipped calibration
  (`published_pilot_errors` of data/calibration.yaml, trainscale.calibrate.stored).

Each command runs `repeats` times, alternating; both the wall-clock seconds and the CPU seconds
(user + system of the process and its children) are taken. The gate: calibrate at most
:data:`GATE` x one predict call, by the ratio of the medians, wall-clock and CPU both; the exit
status is 1 when it fails. On a shared machine the other load stretches the wall-clock times of
both commands (the CPU seconds much less): the ratios are the measure.

Run: `python benchmarks/calibrate_speed.py [--repeats R]` from the repository root with the
package importable (`PYTHONPATH=src`). `--profile FILE` also writes a cProfile of one calibrate
run (`python -m pstats FILE`).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: calibrate --measurements on two rows may take at most this many predict calls.
GATE = 3.0

#: Two measured rows: Llama 3 8B on H100 with FSDP at 8 and 16 GPUs (one and two nodes).
ROWS = """\
model,gpu,num_gpus,tp,pp,sharding,recompute,seq_len,micro_batch,global_batch,precision,framework,measured_tokens_per_s_per_gpu
llama3-8b,h100-sxm-80gb,8,1,1,fsdp,none,8192,1,32,bf16,pytorch,5800
llama3-8b,h100-sxm-80gb,16,1,1,fsdp,none,8192,1,64,bf16,pytorch,5600
"""

PREDICT = [
    "predict", "--model", "llama3-8b", "--gpu", "h100-sxm-80gb", "--num-gpus", "16",
    "--seq-len", "8192", "--sharding", "fsdp", "--framework", "pytorch",
]  # fmt: skip


def timed(arguments: list[str], *, cwd: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of ``python -m trainscale.cli ARGUMENTS``, from
    start to exit; fails on an error."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "trainscale.cli", *arguments],
        cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"trainscale {' '.join(arguments)} failed ({done.returncode}):\n{done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", type=Path, help="write a cProfile of one calibrate run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "two.csv").write_text(ROWS)
        calibrate = ["calibrate", "--measurements", "two.csv", "-o", "mine.yaml"]
        timed(PREDICT, cwd=work)  # warm the file cache once
        times: dict[str, list[tuple[float, float]]] = {"predict": [], "calibrate": []}
        for _ in range(args.repeats):
            times["predict"].append(timed(PREDICT, cwd=work))
            times["calibrate"].append(timed(calibrate, cwd=work))
        if args.profile is not None:
            profile = ["-m", "cProfile", "-o", str(args.profile.resolve()), "-m", "trainscale.cli"]
            subprocess.run([sys.executable, *profile, *calibrate], cwd=work, check=True,
                           capture_output=True)  # fmt: skip
    ratios = []
    for k, what in enumerate(("wall-clock", "CPU")):
        medians = {name: statistics.median(v[k] for v in values) for name, values in times.items()}
        for name, values in times.items():
            best = min(v[k] for v in values)
            print(f"{name:<10} {what:<10} best {best:6.2f} s   median of {args.repeats} "
                  f"{medians[name]:6.2f} s")  # fmt: skip
        ratios.append(medians["calibrate"] / medians["predict"])
        print(f"calibrate / predict ({what})  {ratios[-1]:.2f} x")
    passed = max(ratios) <= GATE
    print(f"gate: at most {GATE:g} x: {'pass' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
