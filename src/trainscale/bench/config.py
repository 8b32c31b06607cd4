"""What one harness run does: model shape, batch, parallelism, steps, instrumentation.

Torch-free, so the command line, the Snakemake bench sweep and the tests can build and check a
:class:`BenchConfig` without PyTorch. Field names are the configuration table's
(``trainscale.schema``) wherever the concept is the same (``layers``, ``seq_len``,
``global_batch``, ``tp``, ``sharding`` …), so the manifest is written without renaming.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from trainscale.errors import TrainscaleError

__all__ = ["BACKENDS", "BENCH_SHARDINGS", "DEVICES", "BenchConfig", "BenchPlan", "plan_bench"]

BENCH_SHARDINGS = ("fsdp", "zero2", "hsdp", "ddp")
BACKENDS = ("gloo", "nccl")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """One harness run. Sizes in tokens/sequences, times in seconds unless named otherwise."""

    out_dir: Path
    """Run folder to create (``data/runs/<run_id>`` layout: ``run.yaml``, ``logs/``,
    ``traces/``); must be empty or absent."""
    run_id: str
    """Run name written to the manifest; the folder name."""
    description: str
    """One sentence for the manifest."""
    model: str
    """Model catalogue key the shape came from (``data/models.yaml``), or ``""``."""
    layers: int
    """Transformer blocks."""
    hidden: int
    """Model width."""
    heads: int
    """Query heads."""
    kv_heads: int
    """Key/value heads (grouped-query attention)."""
    ffn: int
    """SwiGLU inner size."""
    vocab: int
    """Vocabulary size."""
    seq_len: int
    """Tokens per sequence."""
    micro_batch: int
    """Sequences per data-parallel rank per micro-step."""
    global_batch: int | None
    """Sequences per optimizer step over the job; None: ``micro_batch × dp`` (no accumulation)."""
    steps: int
    """Optimizer steps in all, warm-up included; every step is logged."""
    warmup_steps: int
    """Leading steps excluded from the harness's steady-state timing and marked as warm-up in
    the manifest (``steady_state.warmup_steps``); the profiler runs inside them."""
    tp: int = 1
    """Tensor-parallel degree (1 = off)."""
    sharding: Literal["fsdp", "zero2", "hsdp", "ddp"] = "fsdp"
    """``fsdp``: FSDP2 full sharding, reshard after forward; ``zero2``: FSDP2 without reshard
    after forward; ``hsdp``: shard within a node, replicate across nodes; ``ddp``: replicate."""
    backend: Literal["gloo", "nccl"] = "gloo"
    """Process-group backend: ``gloo`` for CPU, ``nccl`` for CUDA."""
    device: Literal["cpu", "cuda"] = "cpu"
    """Where the model runs. CUDA: bf16 mixed precision; CPU: fp32."""
    profile_steps: int = 0
    """Steps recorded by ``torch.profiler`` (Kineto trace per rank); 0 = no trace. Needs
    ``warmup_steps >= profile_steps + 2``: one profiler warm-up step before, and the trace is
    written before the last warm-up step, so tracing never touches the timed steps."""
    power_interval_ms: int = 100
    """NVML power sampling interval in milliseconds on CUDA; 0 = no power log."""
    lr: float = 3e-3
    """AdamW learning rate."""
    seed: int = 0
    """Seed of the weights (same on every rank) and of the synthetic batches (per data rank)."""
    peak_tflops: float | None = None
    """Dense peak TFLOP/s per device used for the logged MFU; None: from the hardware catalogue
    for a known GPU, unknown on CPU (the log then prints ``mfu: 0.00%``)."""
    threads: int | None = None
    """Intra-op CPU threads per rank; None: the CPUs available divided by the local ranks."""

    def __post_init__(self) -> None:
        """Check the fields that do not depend on the world size."""
        problems = []
        for name in (
            "layers",
            "hidden",
            "heads",
            "kv_heads",
            "ffn",
            "vocab",
            "seq_len",
            "micro_batch",
            "steps",
            "tp",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                problems.append(f"{name} must be a positive integer, not {value!r}")
        if problems:
            raise TrainscaleError("bench: " + "; ".join(problems))
        if self.hidden % self.heads or (self.hidden // self.heads) % 2:
            problems.append(
                f"hidden {self.hidden} must divide by heads {self.heads} into an even head width"
            )
        if self.heads % self.kv_heads:
            problems.append(f"heads {self.heads} must divide by kv_heads {self.kv_heads}")
        if self.heads % self.tp or self.kv_heads % self.tp or self.ffn % self.tp:
            problems.append(
                f"tp {self.tp} must divide heads {self.heads}, kv_heads {self.kv_heads} and "
                f"ffn {self.ffn}"
            )
        if self.global_batch is not None and self.global_batch < 1:
            problems.append(f"global_batch must be positive, not {self.global_batch}")
        if not 0 <= self.warmup_steps < self.steps:
            problems.append(
                f"warmup_steps {self.warmup_steps} must be >= 0 and < steps {self.steps}"
            )
        if self.profile_steps < 0:
            problems.append(f"profile_steps must be >= 0, not {self.profile_steps}")
        elif self.profile_steps and self.warmup_steps < self.profile_steps + 2:
            problems.append(
                f"profiling {self.profile_steps} step(s) needs warmup_steps >= "
                f"{self.profile_steps + 2} (one profiler warm-up step, then the traced steps, "
                f"then one clean warm-up step), not {self.warmup_steps}"
            )
        if self.power_interval_ms < 0:
            problems.append(f"power_interval_ms must be >= 0, not {self.power_interval_ms}")
        if self.sharding not in BENCH_SHARDINGS:
            problems.append(f"sharding {self.sharding!r} is not one of {BENCH_SHARDINGS}")
        if self.backend not in BACKENDS:
            problems.append(f"backend {self.backend!r} is not one of {BACKENDS}")
        if self.device not in DEVICES:
            problems.append(f"device {self.device!r} is not one of {DEVICES}")
        if (self.device == "cuda" and self.backend == "gloo") or (
            self.device == "cpu" and self.backend == "nccl"
        ):
            problems.append(
                f"backend {self.backend} does not run on device {self.device} "
                "(use gloo with cpu, nccl with cuda)"
            )
        if self.sharding == "ddp" and self.tp > 1:
            problems.append("sharding ddp cannot be combined with tp > 1")
        if not self.lr > 0:
            problems.append(f"lr must be positive, not {self.lr}")
        if self.peak_tflops is not None and not self.peak_tflops > 0:
            problems.append(f"peak_tflops must be positive, not {self.peak_tflops}")
        if self.threads is not None and self.threads < 1:
            problems.append(f"threads must be >= 1, not {self.threads}")
        if problems:
            raise TrainscaleError("bench: " + "; ".join(problems))

    @property
    def precision(self) -> str:
        """``bf16`` on CUDA (mixed precision), ``fp32`` on CPU."""
        return "bf16" if self.device == "cuda" else "fp32"


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchPlan:
    """The degrees and batch split of a run on a given world size."""

    world_size: int
    """Ranks (one per GPU or CPU process)."""
    nodes: int
    """Nodes (``world_size / ranks per node``)."""
    dp: int
    """Data-parallel degree = world_size / tp."""
    global_batch: int
    """Sequences per optimizer step over the job."""
    local_batch: int
    """Sequences per data-parallel rank per step = global_batch / dp."""
    grad_accum: int
    """Micro-batches per step per data-parallel rank = local_batch / micro_batch."""
    tokens_per_step: int
    """global_batch × seq_len."""


def plan_bench(config: BenchConfig, *, world_size: int, nodes: int) -> BenchPlan:
    """Check ``config`` against the world size and derive the batch split.

    Raises
    ------
    TrainscaleError
        ``tp`` does not divide the world size, or the global batch does not divide into
        ``dp × micro_batch``; the message shows every factor.
    """
    if world_size % config.tp:
        raise TrainscaleError(f"bench: tp {config.tp} does not divide the world size {world_size}")
    dp = world_size // config.tp
    global_batch = config.global_batch or config.micro_batch * dp
    if global_batch % (dp * config.micro_batch):
        raise TrainscaleError(
            f"bench: global_batch {global_batch} must be a multiple of dp × micro_batch = "
            f"{dp} × {config.micro_batch} (dp = world size {world_size} / tp {config.tp})"
        )
    if config.sharding == "hsdp" and (nodes < 2 or dp % nodes):
        raise TrainscaleError(
            f"bench: hsdp replicates across nodes; needs >= 2 nodes dividing dp {dp}, got {nodes}"
        )
    local_batch = global_batch // dp
    return BenchPlan(
        world_size=world_size,
        nodes=nodes,
        dp=dp,
        global_batch=global_batch,
        local_batch=local_batch,
        grad_accum=local_batch // config.micro_batch,
        tokens_per_step=global_batch * config.seq_len,
    )
