"""Benchmark: peak memory and time of ``trainscale ingest`` on a 10^6-line log.

Builds two synthetic run folders in a temporary directory and ingests each in a fresh
``trainscale ingest`` process, reporting that process's peak resident memory (``ru_maxrss`` of the
child) and wall time:

- ``steps``: a torchtitan step log of ``--lines`` step lines (default 10^6, one step per second,
  the line format of ``tests/ingest/test_damage.py``) and a short power log;
- ``power``: an nvidia-smi CSV of ``--lines`` samples (8 GPUs polled every 0.1 s) and the step
  log that spans it.

The bound is 500 MB for a 10^6-line log (``docs/ingest/checks.md``, "Long logs"). Run from the
repository root with the package installed: ``nice python benchmarks/ingest_memory.py``
(``--lines 100000`` for a quick look). It prints one line per run: log size in MB, peak memory
in MB, bytes of memory per byte of log and seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

START = dt.datetime(2025, 1, 1, 12, 0, 0)
GPUS = 8
SEQ_LEN = 4096
GLOBAL_BATCH = 16


def _titan_line(step: int) -> str:
    stamp = (START + dt.timedelta(seconds=step)).strftime("%Y-%m-%d %H:%M:%S")
    tps = 2048 + step % 7  # tokens per step = GLOBAL_BATCH * SEQ_LEN / GPUS per second
    return (
        f"[rank0]:[titan] {stamp},000 - root - INFO - step: {step:2}  "
        f"loss: {8 - 1e-6 * step:7.4f}  grad_norm:  1.0000  memory: 40.00GiB(50.00%)  "
        f"tps: {tps:,}  tflops: 100.00  mfu: 10.00%\n"
    )


def _write_steps(path: Path, steps: int) -> None:
    with path.open("w") as out:
        out.write("[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Starting job\n")
        for step in range(1, steps + 1):
            out.write(_titan_line(step))


def _write_power(path: Path, samples: int) -> None:
    polls = max(samples // GPUS, 1)
    with path.open("w") as out:
        out.write("timestamp, index, power.draw [W], utilization.gpu [%]\n")
        for poll in range(polls):
            stamp = START + dt.timedelta(milliseconds=1000 + 100 * poll)
            text = stamp.strftime("%Y/%m/%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"
            for gpu in range(GPUS):
                out.write(f"{text}, {gpu}, {500 + gpu + poll % 11:.2f} W, 90 %\n")


def _manifest(run: Path) -> None:
    manifest = {
        "run_id": run.name,
        "description": "Synthetic torchtitan run for benchmarks/ingest_memory.py.",
        "configuration": {
            "model": "llama2-7b",
            "seq_len": SEQ_LEN,
            "global_batch": GLOBAL_BATCH,
            "micro_batch": 2,
            "gpu": "h100-sxm-80gb",
            "num_gpus": GPUS,
            "tp": 1,
            "pp": 1,
            "sharding": "fsdp",
        },
        "logs": [
            {"path": "steps.log", "kind": "torchtitan"},
            {"path": "power.csv", "kind": "nvidia_smi"},
        ],
        "steady_state": {"warmup_steps": 2},
    }
    (run / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))


def _ingest(run: Path) -> tuple[float, float]:
    """Peak RSS (MB) and wall seconds of one ``trainscale ingest`` process."""
    code = (
        "import resource, subprocess, sys\n"
        "rc = subprocess.call([sys.executable, '-c', 'from trainscale.cli import main; main()',"
        " 'ingest', sys.argv[1],"
        " '-o', sys.argv[2]], stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(rc)\n"
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, str(run), str(run / "out.parquet")],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"trainscale ingest {run} failed:\n{done.stderr}")
    return int(done.stdout.split()[-1]) / 1024, seconds  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="lines of the long log")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        for kind in ("steps", "power"):
            run = Path(temp) / kind
            run.mkdir()
            # the power run's steps span its samples (0.1 s per poll of all GPUs)
            step_lines = args.lines if kind == "steps" else args.lines // GPUS // 10 + 2
            _write_steps(run / "steps.log", step_lines)
            _write_power(run / "power.csv", args.lines if kind == "power" else 16 * GPUS)
            _manifest(run)
            log = run / ("steps.log" if kind == "steps" else "power.csv")
            size_mb = log.stat().st_size / 1e6
            peak_mb, seconds = _ingest(run)
            print(
                f"{kind:5} log: {args.lines:,} lines, {size_mb:.0f} MB; peak memory "
                f"{peak_mb:.0f} MB ({peak_mb / size_mb:.1f} bytes per byte of log); "
                f"{seconds:.1f} s"
            )


if __name__ == "__main__":
    main()
