"""``trainscale bench``: run the benchmark harness (a real training loop) and write a run folder.

Launch with torchrun, one process per GPU (or per CPU rank)::

    torchrun --nproc-per-node 8 -m trainscale.cli bench --model llama2-7b --layers 4 \\
        --seq-len 4096 --micro-batch 1 --steps 30 --warmup 8 --profile-steps 3 \\
        --device cuda --out data/runs/h200_llama2-7b-l4_fsdp8

or ``python -m trainscale.bench …`` for a single process. The folder gets ``logs/`` (torchtitan
step lines, NVML power CSV on GPUs), ``traces/`` (Kineto traces with ``--profile-steps``) and
``run.yaml``; ``trainscale ingest`` turns it into a dataset row. See :mod:`trainscale.bench`.

PyTorch is an optional extra: this module (and ``trainscale --help``) does not import it; the
command says how to install it when it is missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trainscale.errors import TrainscaleError

__all__ = ["HELP", "NAME", "add_arguments", "build_config", "run"]

NAME = "bench"
HELP = "run the training benchmark harness (launch with torchrun) and write a run folder"

_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``."""
    from trainscale.bench.config import BACKENDS, BENCH_SHARDINGS, DEVICES

    model = parser.add_argument_group(
        "model (a catalogue model, optionally with fields overridden, or every shape field)"
    )
    model.add_argument("--model", default="", help="model catalogue key, e.g. llama2-7b")
    model.add_argument("--layers", type=int, help="transformer blocks (e.g. cut a catalogue model)")
    model.add_argument("--hidden", type=int, help="model width")
    model.add_argument("--heads", type=int, help="query heads")
    model.add_argument("--kv-heads", type=int, help="key/value heads (default: --heads)")
    model.add_argument("--ffn", type=int, help="SwiGLU inner size")
    model.add_argument("--vocab", type=int, help="vocabulary size")
    batch = parser.add_argument_group("batch and steps")
    batch.add_argument("--seq-len", type=int, required=True, help="tokens per sequence")
    batch.add_argument(
        "--micro-batch",
        type=int,
        default=1,
        help="sequences per data-parallel rank per micro-step (default 1)",
    )
    batch.add_argument(
        "--global-batch",
        type=int,
        help="sequences per step over the job (default: micro-batch × dp)",
    )
    batch.add_argument("--steps", type=int, default=20, help="steps in all (default 20)")
    batch.add_argument(
        "--warmup",
        type=int,
        default=5,
        help="leading steps left out of the timing summary (default 5)",
    )
    batch.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    batch.add_argument("--seed", type=int, default=0, help="seed of weights and tokens")
    par = parser.add_argument_group("parallelism and device")
    par.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (default 1)")
    par.add_argument(
        "--sharding",
        choices=BENCH_SHARDINGS,
        default="fsdp",
        help="data-parallel sharding (default fsdp: FSDP2, reshard after forward)",
    )
    par.add_argument("--device", choices=DEVICES, default="cpu", help="cpu (default) or cuda")
    par.add_argument(
        "--backend",
        choices=BACKENDS,
        help="process-group backend (default: nccl on cuda, gloo on cpu)",
    )
    par.add_argument(
        "--threads", type=int, help="CPU threads per rank (default: available CPUs / local ranks)"
    )
    par.add_argument(
        "--peak-tflops",
        type=float,
        help="dense peak TFLOP/s per device for the logged MFU (default: catalogue)",
    )
    out = parser.add_argument_group("instrumentation and output")
    out.add_argument(
        "--profile-steps",
        type=int,
        default=0,
        help="steps traced by torch.profiler inside the warm-up (default 0: none)",
    )
    out.add_argument(
        "--power-interval-ms",
        type=int,
        default=100,
        help="NVML power sampling interval on CUDA, ms (default 100; 0: off)",
    )
    out.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="RUN_DIR",
        help="new run folder, e.g. data/runs/<run_id>",
    )
    out.add_argument("--run-id", help="run name (default: the folder's name)")
    out.add_argument("--description", help="one sentence for the manifest")


def _shape(args: argparse.Namespace) -> dict[str, int]:
    """The model shape: catalogue values, overridden by the explicit options."""
    from trainscale.sim.model.shape import load_models

    shape: dict[str, int] = {}
    if args.model:
        models = load_models()
        if args.model not in models:
            raise TrainscaleError(
                f"bench: unknown --model {args.model!r}; catalogue: {', '.join(sorted(models))}"
            )
        entry = models[args.model]
        if entry.mlp != "swiglu":
            raise TrainscaleError(
                f"bench: {args.model} has a {entry.mlp} MLP; the harness builds Llama-style "
                "SwiGLU decoders only"
            )
        shape = {name: getattr(entry, name) for name in _SHAPE}
    for name in _SHAPE:
        value = getattr(args, name)
        if value is not None:
            shape[name] = value
    if "kv_heads" not in shape and "heads" in shape:
        shape["kv_heads"] = shape["heads"]
    missing = [f"--{n.replace('_', '-')}" for n in _SHAPE if n not in shape]
    if missing:
        raise TrainscaleError(
            f"bench: give --model or the model shape; missing {', '.join(missing)}"
        )
    return shape


def build_config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The :class:`~trainscale.bench.config.BenchConfig` of parsed arguments (no torch)."""
    from trainscale.bench.config import BenchConfig

    shape = _shape(args)
    device = args.device
    backend = args.backend or ("nccl" if device == "cuda" else "gloo")
    out = Path(args.out)
    description = args.description or (
        f"trainscale bench: {shape['layers']}-layer Llama-style decoder (hidden "
        f"{shape['hidden']}{', from ' + args.model if args.model else ''}), {args.sharding} "
        f"tp {args.tp}, seq {args.seq_len}, on {device} with {backend}"
    )
    return BenchConfig(
        out_dir=out,
        run_id=args.run_id or out.resolve().name,
        description=description,
        model=args.model,
        seq_len=args.seq_len,
        micro_batch=args.micro_batch,
        global_batch=args.global_batch,
        steps=args.steps,
        warmup_steps=args.warmup,
        tp=args.tp,
        sharding=args.sharding,
        backend=backend,
        device=device,
        profile_steps=args.profile_steps,
        power_interval_ms=args.power_interval_ms,
        lr=args.lr,
        seed=args.seed,
        peak_tflops=args.peak_tflops,
        threads=args.threads,
        **shape,
    )


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
