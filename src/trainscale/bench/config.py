"""What one harness run does: model shape, batch, parallelism, steps, instrumentation.

Torch-free, so the command line, the Snakemake bench sweep and the tests can build and check a
:class:`BenchConfig` without PyTorch. Field names are the configuration table's
(``trainscale.schema``) wherever the concept is the same (``layers``, ``seq_len``,
``global_batch``, ``tp``, ``sharding`` …), so the manifest is written without renaming. The
model's shape is the simulator's :class:`~trainscale.sim.model.params.TransformerShape` (one
value, not six fields), so its FLOPs per token come from the same formula.

Every field is a ``trainscale bench`` option, declared in its metadata (:func:`option`: its
argument group and help, with ``%(default)s`` for the field's default); the fields are in the
order ``--help`` lists them. :mod:`trainscale.bench.options` builds the parser from these fields,
so a field's default and help are written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from trainscale.errors import TrainscaleError
from trainscale.sim.model.params import TransformerShape

__all__ = [
    "BACKENDS",
    "BENCH_SHARDINGS",
    "DEVICES",
    "SHAPE_FIELDS",
    "BenchConfig",
    "BenchPlan",
    "option",
    "plan_bench",
]

Sharding = Literal["fsdp", "zero2", "hsdp", "ddp"]
Backend = Literal["gloo", "nccl"]
Device = Literal["cpu", "cuda"]
BENCH_SHARDINGS: tuple[str, ...] = get_args(Sharding)
BACKENDS: tuple[str, ...] = get_args(Backend)
DEVICES: tuple[str, ...] = get_args(Device)
#: The shape's integer fields, in the manifest's order (``swiglu`` is always true here: the
#: harness builds Llama-style SwiGLU decoders only).
SHAPE_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(TransformerShape) if f.name != "swiglu"
)


def option(
    group: str,
    text: str,
    *,
    flag: str | None = None,
    metavar: str | None = None,
    derived: bool = False,
) -> dict[str, Any]:
    """A field's ``trainscale bench`` option, as field metadata.

    Parameters
    ----------
    group
        Argument group: ``model``, ``batch``, ``parallelism`` or ``output``
        (:data:`trainscale.bench.options.GROUPS`).
    text
        The option's help; ``%(default)s`` is the field's default.
    flag
        Long option without ``--`` (default: the field name with ``-`` for ``_``); the parsed
        value's name is the flag's, with ``_`` for ``-``.
    metavar
        The value's name in ``--help`` (default: argparse's).
    derived
        The option's default is None and :func:`trainscale.bench.options.build_config` derives
        the value (from ``--device`` or ``--out``) instead of the field's default.
    """
    return {
        "option": {
            "group": group,
            "help": text,
            "flag": flag,
            "metavar": metavar,
            "derived": derived,
        }
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """One harness run. Sizes in tokens/sequences, times in seconds unless named otherwise."""

    model: str = field(default="", metadata=option("model", "model catalogue key, e.g. llama2-7b"))
    """Model catalogue key the shape came from (``data/models.yaml``), or ``""``."""
    shape: TransformerShape = field(metadata=option("model", "the model shape"))
    """The decoder's shape (integers; ``swiglu`` true). On the command line it is one option per
    :data:`SHAPE_FIELDS` entry, with the help of :data:`trainscale.bench.options.SHAPE_HELP`."""
    seq_len: int = field(metadata=option("batch", "tokens per sequence"))
    """Tokens per sequence."""
    micro_batch: int = field(
        default=1,
        metadata=option(
            "batch", "sequences per data-parallel rank per micro-step (default %(default)s)"
        ),
    )
    """Sequences per data-parallel rank per micro-step."""
    global_batch: int | None = field(
        default=None,
        metadata=option("batch", "sequences per step over the job (default: micro-batch × dp)"),
    )
    """Sequences per optimizer step over the job; None: ``micro_batch × dp`` (no accumulation)."""
    steps: int = field(default=20, metadata=option("batch", "steps in all (default %(default)s)"))
    """Optimizer steps in all, warm-up included; every step is logged."""
    warmup_steps: int = field(
        default=5,
        metadata=option(
            "batch",
            "leading steps left out of the timing summary (default %(default)s)",
            flag="warmup",
        ),
    )
    """Leading steps excluded from the harness's steady-state timing and marked as warm-up in
    the manifest (``steady_state.warmup_steps``); the profiler runs inside them."""
    lr: float = field(default=3e-3, metadata=option("batch", "AdamW learning rate"))
    """AdamW learning rate."""
    seed: int = field(default=0, metadata=option("batch", "seed of weights and tokens"))
    """Seed of the weights (same on every rank) and of the synthetic batches (per data rank)."""
    tp: int = field(
        default=1, metadata=option("parallelism", "tensor-parallel degree (default %(default)s)")
    )
    """Tensor-parallel degree (1 = off)."""
    sharding: Sharding = field(
        default="fsdp",
        metadata=option(
            "parallelism",
            "data-parallel sharding (default %(default)s: FSDP2, reshard after forward)",
        ),
    )
    """``fsdp``: FSDP2 full sharding, reshard after forward; ``zero2``: FSDP2 without reshard
    after forward; ``hsdp``: shard within a node, replicate across nodes; ``ddp``: replicate."""
    device: Device = field(
        default="cpu", metadata=option("parallelism", "%(default)s (default) or cuda")
    )
    """Where the model runs. CUDA: bf16 mixed precision; CPU: fp32."""
    backend: Backend = field(
        default="gloo",
        metadata=option(
            "parallelism",
            "process-group backend (default: nccl on cuda, gloo on cpu)",
            derived=True,
        ),
    )
    """Process-group backend: ``gloo`` for CPU, ``nccl`` for CUDA."""
    threads: int | None = field(
        default=None,
        metadata=option(
            "parallelism", "CPU threads per rank (default: available CPUs / local ranks)"
        ),
    )
    """Intra-op CPU threads per rank; None: the CPUs available divided by the local ranks."""
    peak_tflops: float | None = field(
        default=None,
        metadata=option(
            "parallelism", "dense peak TFLOP/s per device for the logged MFU (default: catalogue)"
        ),
    )
    """Dense peak TFLOP/s per device used for the logged MFU; None: from the hardware catalogue
    for a known GPU, unknown on CPU (the log then prints ``mfu: 0.00%``)."""
    profile_steps: int = field(
        default=0,
        metadata=option(
            "output",
            "steps traced by torch.profiler inside the warm-up (default %(default)s: none)",
        ),
    )
    """Steps recorded by ``torch.profiler`` (Kineto trace per rank); 0 = no trace. Needs
    ``warmup_steps >= profile_steps + 2``: one profiler warm-up step before, and the trace is
    written before the last warm-up step, so tracing never touches the timed steps."""
    power_interval_ms: int = field(
        default=100,
        metadata=option(
            "output", "NVML power sampling interval on CUDA, ms (default %(default)s; 0: off)"
        ),
    )
    """NVML power sampling interval in milliseconds on CUDA; 0 = no power log."""
    out_dir: Path = field(
        metadata=option(
            "output", "new run folder, e.g. data/runs/<run_id>", flag="out", metavar="RUN_DIR"
        )
    )
    """Run folder to create (``data/runs/<run_id>`` layout: ``run.yaml``, ``logs/``,
    ``traces/``); must be empty or absent."""
    run_id: str = field(
        metadata=option("output", "run name (default: the folder's name)", derived=True)
    )
    """Run name written to the manifest; the folder name."""
    description: str = field(
        metadata=option("output", "one sentence for the manifest", derived=True)
    )
    """One sentence for the manifest."""

    def __post_init__(self) -> None:
        """Check the fields that do not depend on the world size; every problem at once."""
        sizes = {name: getattr(self.shape, name) for name in SHAPE_FIELDS} | {
            name: getattr(self, name) for name in ("seq_len", "micro_batch", "steps", "tp")
        }
        problems = [
            f"{name} must be a positive integer, not {value!r}"
            for name, value in sizes.items()
            if not isinstance(value, int) or value < 1
        ]
        if not problems:
            problems = [*self._shape_problems(), *self._step_problems(), *self._stack_problems()]
        if problems:
            raise TrainscaleError("bench: " + "; ".join(problems))

    def _shape_problems(self) -> list[str]:
        """The shape against itself and the tensor-parallel degree."""
        hidden, heads, kv_heads, ffn = (
            self.shape.hidden, self.shape.heads, self.shape.kv_heads, self.shape.ffn
        )  # fmt: skip
        problems = []
        if not self.shape.swiglu:
            problems.append("the harness builds Llama-style SwiGLU decoders only (swiglu true)")
        if hidden % heads or (hidden // heads) % 2:
            problems.append(f"hidden {hidden} must divide by heads {heads} into an even head width")
        if heads % kv_heads:
            problems.append(f"heads {heads} must divide by kv_heads {kv_heads}")
        if heads % self.tp or kv_heads % self.tp or ffn % self.tp:
            problems.append(
                f"tp {self.tp} must divide heads {heads}, kv_heads {kv_heads} and ffn {ffn}"
            )
        return problems

    def _step_problems(self) -> list[str]:
        """The batch, the steps, the profiler window and the power interval."""
        problems = []
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
        return problems

    def _stack_problems(self) -> list[str]:
        """Sharding, backend and device; the learning rate and the optional per-rank numbers."""
        problems = []
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
        return problems

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
