"""``trainscale bench``: run the benchmark harness (a real training loop) and write a run folder.

Launch with torchrun, one process per GPU (or per CPU rank)::

    torchrun --nproc-per-node 8 -m trainscale.cli bench --model llama2-7b --layers 4 \\
        --seq-len 4096 --micro-batch 1 --steps 30 --warmup 8 --profile-steps 3 \\
        --device cuda --out data/runs/h200_llama2-7b-l4_fsdp8

or ``python -m trainscale.cli bench …`` for a single process. The folder gets ``logs/``
(torchtitan step lines, NVML power CSV on GPUs), ``traces/`` (Kineto traces with
``--profile-steps``) and ``run.yaml``; ``trainscale ingest`` turns it into a dataset row. The
options are :class:`~trainscale.bench.config.BenchConfig`'s fields
(:mod:`trainscale.bench.options`). See :mod:`trainscale.bench`.

PyTorch is an optional extra: this module (and ``trainscale --help``) does not import it; the
command says how to install it when it is missing.
"""

from __future__ import annotations

import argparse

from trainscale.bench.options import add_arguments, build_config
from trainscale.errors import TrainscaleError

__all__ = ["HELP", "NAME", "add_arguments", "run"]

NAME = "bench"
HELP = "run the training benchmark harness (launch with torchrun) and write a run folder"


def run(args: argparse.Namespace) -> int:
    """Run the harness on this rank; returns the exit status."""
    config = build_config(args)
    try:
        from trainscale.bench.loop import run_bench
    except ImportError as error:
        if (error.name or "").split(".")[0] in {"torch", "numpy"}:
            raise TrainscaleError(
                f"bench needs PyTorch ({error}); install the extra: pip install -e '.[bench]'"
            ) from None
        raise
    result = run_bench(config)
    if result.manifest_path is not None:
        print(f"trainscale bench: wrote {result.manifest_path}")
    return 0
