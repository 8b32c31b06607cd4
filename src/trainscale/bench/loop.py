"""The harness's training loop: synthetic tokens, AdamW, honest timing, logs and manifest.

One call of :func:`run_bench` per process. Under ``torchrun`` every rank calls it (the process
group comes from torchrun's environment); started without torchrun it runs as a one-rank job.

What a step is, and how it is timed:

- each data-parallel rank trains on one fixed batch of random tokens (``local_batch × seq_len``,
  seeded by its data-parallel index, the same for the ``tp`` ranks that share it), split into
  ``grad_accum`` micro-batches; the model memorises it, so the loss falls step after step —
  a check that the harness really trains;
- forward and backward per micro-batch (gradient sync only on the last), gradient clipping to
  norm 1, AdamW step; on CUDA under bf16 autocast (FSDP gathers parameters in bf16), on CPU in
  fp32; the loss is averaged over ranks with an all-reduce;
- the step's wall time is ``time.perf_counter()`` at its end — after ``torch.cuda.synchronize``
  on CUDA — minus the previous step's end, so consecutive steps tile the run: the logging of a
  step is paid by the next one, and the steady-state window (after the warm-up) is exactly the
  sum of its steps (torchtitan's ``time_delta`` convention).

The harness's own summary (manifest ``harness_timing``) is computed on rank 0 from that window:
``tokens_per_s`` = tokens trained by the job ÷ the window's wall time. The logged per-step
``tps`` come from the same clock, step by step, so the ingested median and the harness's total
agree when the steps are steady; :func:`trainscale.ingest.runs.ingest_run` recovers the former from
the log alone.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from trainscale.bench.config import BenchConfig, BenchPlan, plan_bench
from trainscale.bench.device import DeviceInfo, describe_device, peak_memory
from trainscale.bench.logging import StepLogger
from trainscale.bench.manifest import harness_purpose, write_manifest
from trainscale.bench.model import LlamaDecoder, ModelShapeArgs
from trainscale.bench.parallel import (
    apply_data_parallel,
    apply_tensor_parallel,
    build_mesh,
    check_tensor_parallel_support,
    clip_grad_norm,
)
from trainscale.bench.power import PowerSampler, open_nvml
from trainscale.bench.profile import TraceWindow
from trainscale.errors import TrainscaleError
from trainscale.sim.model.flops import model_flops_per_token
from trainscale.sim.model.params import TransformerShape
from trainscale.version import __version__

__all__ = ["BenchResult", "DistEnv", "run_bench"]

_MAX_GRAD_NORM = 1.0
_GC_EVERY = 50
STEP_LOG = "logs/steps_rank0.log"


@dataclass(frozen=True, slots=True, kw_only=True)
class DistEnv:
    """Where this process sits in the job (from torchrun's environment variables)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    launched: bool
    """True under torchrun (``RANK`` set); False for a plain one-process run."""

    @classmethod
    def from_environ(cls) -> DistEnv:
        """Read ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``."""
        if "RANK" not in os.environ:
            return cls(rank=0, world_size=1, local_rank=0, local_world_size=1, launched=False)
        world = int(os.environ["WORLD_SIZE"])
        return cls(
            rank=int(os.environ["RANK"]),
            world_size=world,
            local_rank=int(os.environ.get("LOCAL_RANK", 0)),
            local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", world)),
            launched=True,
        )

    @property
    def nodes(self) -> int:
        """Nodes in the job (ranks ÷ ranks per node)."""
        return max(1, self.world_size // self.local_world_size)

    @property
    def node_rank(self) -> int:
        """This process's node."""
        return self.rank // self.local_world_size


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchResult:
    """What one rank measured."""

    step_times_s: list[float]
    """Wall time of every step, warm-up included, seconds."""
    losses: list[float]
    """Loss after every step (mean over ranks)."""
    manifest_path: Path | None
    """The manifest written (rank 0), else None."""
    timing: dict[str, Any]
    """The manifest's ``harness_timing`` (rank 0's clock)."""


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise TrainscaleError(
            f"bench: {out_dir} exists and is not an empty folder; give a new --out folder "
            "(a run folder holds exactly one run)"
        )


def run_bench(config: BenchConfig) -> BenchResult:
    """Run the benchmark described by ``config`` on this rank; see the module docstring.

    Raises
    ------
    TrainscaleError
        The output folder is not empty, the plan does not divide the world size, CUDA was
        asked for but is not available, or tensor parallelism is unsupported here.
    """
    env = DistEnv.from_environ()
    _check_out_dir(config.out_dir)
    plan = plan_bench(config, world_size=env.world_size, nodes=env.nodes)
    if config.device == "cuda":
        if not torch.cuda.is_available():
            raise TrainscaleError("bench: --device cuda, but PyTorch sees no CUDA device")
        device = torch.device("cuda", env.local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        cpus = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
        torch.set_num_threads(config.threads or max(1, cpus // env.local_world_size))
    if env.launched:
        dist.init_process_group(config.backend, device_id=device if device.type == "cuda" else None)
    else:
        dist.init_process_group(config.backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        return _run(config, plan, env, device)
    finally:
        dist.destroy_process_group()


def _shape_args(config: BenchConfig) -> ModelShapeArgs:
    return ModelShapeArgs(
        layers=config.layers,
        hidden=config.hidden,
        heads=config.heads,
        kv_heads=config.kv_heads,
        ffn=config.ffn,
        vocab=config.vocab,
        seq_len=config.seq_len,
    )


def _flops_per_token(config: BenchConfig) -> float:
    shape = TransformerShape(
        config.layers, config.hidden, config.heads, config.kv_heads, config.ffn, config.vocab, True
    )
    return float(model_flops_per_token(shape, config.seq_len))


def _run(config: BenchConfig, plan: BenchPlan, env: DistEnv, device: torch.device) -> BenchResult:
    info = describe_device(device, peak_tflops=config.peak_tflops)
    cuda = device.type == "cuda"
    dist.barrier()  # every rank has checked the (empty) output folder
    if env.rank == 0:
        (config.out_dir / "logs").mkdir(parents=True, exist_ok=True)
        if config.profile_steps:
            (config.out_dir / "traces").mkdir(parents=True, exist_ok=True)
    dist.barrier()
    logger = StepLogger(config.out_dir / STEP_LOG) if env.rank == 0 else None
    try:
        return _train(config, plan, env, device, info, cuda, logger)
    finally:
        if logger is not None:
            logger.close()


def _train(
    config: BenchConfig,
    plan: BenchPlan,
    env: DistEnv,
    device: torch.device,
    info: DeviceInfo,
    cuda: bool,
    logger: StepLogger | None,
) -> BenchResult:
    mesh = build_mesh(
        device.type,
        world_size=env.world_size,
        tp=config.tp,
        sharding=config.sharding,
        nodes=env.nodes,
    )
    if config.tp > 1:
        check_tensor_parallel_support(mesh["tp"], device)
    with device:
        model = LlamaDecoder(_shape_args(config))
    model.init_weights(torch.Generator(device=device).manual_seed(config.seed))
    n_params = sum(p.numel() for p in model.parameters())
    if config.tp > 1:
        apply_tensor_parallel(model, mesh["tp"])
    model = apply_data_parallel(model, mesh, sharding=config.sharding, device=device)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=config.lr, betas=(0.9, 0.95), weight_decay=0.0)

    dp_index = env.rank // config.tp  # tp is the innermost mesh axis
    data = torch.Generator().manual_seed(config.seed + 1 + dp_index)
    tokens = torch.randint(config.vocab, (plan.local_batch, config.seq_len + 1), generator=data)
    tokens = tokens.to(device)
    micro = list(
        zip(
            tokens[:, :-1].split(config.micro_batch),
            tokens[:, 1:].split(config.micro_batch),
            strict=True,
        )
    )
    flops_per_token = _flops_per_token(config)
    tokens_per_rank = plan.local_batch * config.seq_len

    sampler = _start_power(config, env, device)
    window = (
        TraceWindow(
            config.out_dir / "traces" / f"trace_rank{env.rank}.json.gz",
            profile_steps=config.profile_steps,
            warmup_steps=config.warmup_steps,
            cuda=cuda,
        )
        if config.profile_steps
        else None
    )
    if logger is not None:
        _log_settings(logger, config, plan, env, info, n_params, flops_per_token)
        if sampler is None and cuda and config.power_interval_ms:
            logger.warning("no power log: NVML is not available (see the warning on stderr)")

    step_times, losses = [], []
    # Python's cyclic GC would pause a random step for tens of ms: collect now, then only
    # every _GC_EVERY steps (torchtitan's GarbageCollection does the same).
    gc.collect()
    gc.disable()
    dist.barrier()
    if cuda:
        torch.cuda.synchronize(device)
    previous = time.perf_counter()
    window_start = previous if config.warmup_steps == 0 else None
    for step in range(1, config.steps + 1):
        loss_sum = torch.zeros((), device=device)
        for index, (inputs, labels) in enumerate(micro):
            last = index == len(micro) - 1
            with _gradient_sync(model, last, config.sharding), _autocast(cuda):
                logits = model(inputs)
                loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
                loss = loss / plan.grad_accum
            loss.backward()
            loss_sum += loss.detach()
        grad_norm = clip_grad_norm(params, _MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if window is not None:
            window.step()
        if step % _GC_EVERY == 0:
            gc.collect(1)
        dist.all_reduce(loss_sum)  # SUM: gloo has no AVG
        loss_value = loss_sum.item() / env.world_size
        if cuda:
            torch.cuda.synchronize(device)
        now = time.perf_counter()
        step_time = now - previous
        previous = now
        if step == config.warmup_steps:
            window_start = now
        step_times.append(step_time)
        losses.append(loss_value)
        memory_gib, memory_pct = peak_memory(device, info)
        tps = tokens_per_rank / (step_time * config.tp)
        if logger is not None:
            logger.step(
                step=step,
                loss=loss_value,
                grad_norm=grad_norm,
                memory_gib=memory_gib,
                memory_pct=memory_pct,
                tps=tps,
                tflops=flops_per_token * tps / 1e12,
                mfu_pct=100 * flops_per_token * tps / info.peak_flops_per_s
                if info.peak_flops_per_s
                else 0.0,
            )
    window_end = previous
    gc.enable()
    if window is not None:
        window.close()
    polls = sampler.stop() if sampler is not None else 0

    assert window_start is not None  # warmup_steps < steps (BenchConfig)
    timed = step_times[config.warmup_steps :]
    elapsed = window_end - window_start
    timing = {
        "tokens_per_s": _sig(plan.tokens_per_step * len(timed) / elapsed),
        "tokens_per_s_per_gpu": _sig(plan.tokens_per_step * len(timed) / elapsed / env.world_size),
        "tokens_per_s_median": _sig(plan.tokens_per_step / float(np.median(timed))),
        "step_time_s": _sig(elapsed / len(timed)),
        "step_time_s_median": _sig(float(np.median(timed))),
        "step_time_s_iqr": _sig(float(np.subtract(*np.percentile(timed, [75, 25])))),
        "elapsed_s": _sig(elapsed),
        "steps": len(timed),
        "tokens": plan.tokens_per_step * len(timed),
        "peak_tflops_per_device": (
            _sig(info.peak_flops_per_s / 1e12) if info.peak_flops_per_s else None
        ),
        "model_flops_per_token": _sig(flops_per_token),
        "params": int(n_params),
    }
    files = _gather_files(config, env, window, polls)
    hosts: list[str] = [""] * env.world_size
    dist.all_gather_object(hosts, socket.gethostname())
    manifest_path = None
    if logger is not None:
        logger.info(
            f"harness timing: {timing['steps']} steps after {config.warmup_steps} warm-up, "
            f"{timing['elapsed_s']} s, {timing['tokens_per_s']:,} tokens/s "
            f"({timing['tokens_per_s_per_gpu']:,} per rank), mean step {timing['step_time_s']} s,"
            f" median {timing['step_time_s_median']} s"
        )
        manifest_path = write_manifest(
            config.out_dir,
            run_id=config.run_id,
            purpose=harness_purpose(info.type),
            description=config.description,
            configuration=_configuration(config, plan, env, info),
            cluster=_cluster(config, env, info, hosts),
            logs=files,
            warmup_steps=config.warmup_steps,
            trace_warmup_steps=0,
            harness_timing=timing,
        )
        logger.info(f"manifest: {manifest_path}")
    dist.barrier()
    return BenchResult(
        step_times_s=step_times, losses=losses, manifest_path=manifest_path, timing=timing
    )


def _sig(value: float) -> float:
    """Six significant digits (the manifest is read by people as well)."""
    return float(f"{value:.6g}")


def _autocast(cuda: bool) -> contextlib.AbstractContextManager[Any]:
    return torch.autocast("cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext()


def _gradient_sync(model: torch.nn.Module, sync: bool, sharding: str):  # type: ignore[no-untyped-def]
    """Skip the gradient reduction on all but the last micro-batch."""
    if sharding == "ddp":
        return contextlib.nullcontext() if sync else model.no_sync()  # type: ignore[operator]
    model.set_requires_gradient_sync(sync)  # type: ignore[operator]
    return contextlib.nullcontext()


def _start_power(config: BenchConfig, env: DistEnv, device: torch.device) -> PowerSampler | None:
    """Local rank 0 of each node samples the node's job GPUs (CUDA only)."""
    if device.type != "cuda" or env.local_rank != 0 or not config.power_interval_ms:
        return None
    uuids = [str(torch.cuda.get_device_properties(i).uuid) for i in range(env.local_world_size)]
    reader = open_nvml(uuids)
    if reader is None:
        return None
    sampler = PowerSampler(
        reader,
        config.out_dir / f"logs/power_node{env.node_rank}.csv",
        interval_s=config.power_interval_ms / 1000,
    )
    sampler.start()
    return sampler


def _gather_files(
    config: BenchConfig, env: DistEnv, window: TraceWindow | None, polls: int
) -> list[dict[str, Any]]:
    """Every rank's output files, as manifest log entries (on rank 0; others get [])."""
    mine: list[dict[str, Any]] = []
    if env.rank == 0:
        mine.append({"path": STEP_LOG, "kind": "torchtitan", "rank": 0})
    if polls:
        mine.append(
            {
                "path": f"logs/power_node{env.node_rank}.csv",
                "kind": "nvidia_smi",
                "node": env.node_rank,
            }
        )
    if window is not None and window.written:
        mine.append(
            {"path": f"traces/{window.path.name}", "kind": "kineto_trace", "rank": env.rank}
        )
    everyone: list[list[dict[str, Any]]] = [[] for _ in range(env.world_size)]
    dist.all_gather_object(everyone, mine)
    entries = [entry for rank_entries in everyone for entry in rank_entries]
    order = {"torchtitan": 0, "nvidia_smi": 1, "kineto_trace": 2}
    return sorted(entries, key=lambda e: (order[e["kind"]], e["path"]))


def _shape_matches_catalogue(config: BenchConfig) -> bool:
    from trainscale.sim.model.shape import load_models

    model = load_models().get(config.model)
    return (
        model is not None
        and model.mlp == "swiglu"
        and not model.tied_embeddings
        and all(
            getattr(model, name) == getattr(config, name)
            for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
        )
    )


def _configuration(
    config: BenchConfig, plan: BenchPlan, env: DistEnv, info: DeviceInfo
) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    if _shape_matches_catalogue(config):
        cfg["model"] = config.model  # a cut or changed catalogue model is given by its shape
    cfg.update(
        layers=config.layers, hidden=config.hidden, heads=config.heads,
        kv_heads=config.kv_heads, ffn=config.ffn, vocab=config.vocab, mlp="swiglu",
        seq_len=config.seq_len, global_batch=plan.global_batch, micro_batch=config.micro_batch,
    )  # fmt: skip
    if info.type == "cpu":
        cfg["gpu"] = "cpu"
    elif info.gpu_key is not None:
        cfg["gpu"] = info.gpu_key
    cfg.update(
        num_gpus=env.world_size, gpus_per_node=env.local_world_size, tp=config.tp, pp=1, cp=1,
        vpp=1, sharding=config.sharding, recompute="none", precision=config.precision,
        sequence_parallel=False,
    )  # fmt: skip
    return cfg


def _cluster(
    config: BenchConfig, env: DistEnv, info: DeviceInfo, hosts: list[str]
) -> dict[str, Any]:
    software = {
        "trainscale": __version__,
        "torch": str(torch.__version__),
        "python": platform.python_version(),
    }
    if info.type == "cuda":
        software["cuda"] = str(torch.version.cuda)
        with contextlib.suppress(Exception):
            software["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        with contextlib.suppress(Exception):
            import pynvml

            software["nvidia_driver"] = str(pynvml.nvmlSystemGetDriverVersion())
    node_hosts = hosts[:: env.local_world_size]
    cluster: dict[str, Any] = {
        "nodes": env.nodes,
        "gpus_per_node": env.local_world_size,
        "device_name": str(info.name),
        "hostnames": [str(h) for h in node_hosts],
        "software": software,
    }
    if env.nodes == 1:
        cluster["interconnect"] = (
            "loopback (one host)" if info.type == "cpu" else "intra-node only (one host)"
        )
    if info.type == "cpu":
        cluster["notes"] = (
            f"CPU run: {env.local_world_size} process(es) per host with "
            f"{torch.get_num_threads()} intra-op thread(s) each, {config.backend} backend, fp32. "
            "The step lines' memory is each process's peak resident set size; mfu is printed "
            "as 0.00% because a CPU has no catalogue peak."
        )
    return cluster


def _log_settings(
    logger: StepLogger,
    config: BenchConfig,
    plan: BenchPlan,
    env: DistEnv,
    info: DeviceInfo,
    n_params: int,
    flops_per_token: float,
) -> None:
    logger.info(
        f"trainscale bench {__version__}: {env.world_size} rank(s) on {env.nodes} node(s), "
        f"{config.device} ({info.name}), backend {config.backend}, torch {torch.__version__}"
    )
    logger.info(
        f"model: {config.layers} layers, hidden {config.hidden}, heads {config.heads}/"
        f"{config.kv_heads} kv, ffn {config.ffn}, vocab {config.vocab}, {n_params:,} params, "
        f"{flops_per_token:.4g} model FLOPs/token"
    )
    logger.info(
        f"plan: sharding {config.sharding}, tp {config.tp}, dp {plan.dp}; seq_len "
        f"{config.seq_len}, global batch {plan.global_batch}, micro batch {config.micro_batch}, "
        f"grad accumulation {plan.grad_accum}; {plan.tokens_per_step:,} tokens/step"
    )
    logger.info(
        f"steps: {config.steps} ({config.warmup_steps} warm-up, not timed in the summary); "
        f"profiled steps: {config.profile_steps}; power interval: "
        f"{config.power_interval_ms if info.type == 'cuda' else 0} ms; peak "
        f"{info.peak_flops_per_s / 1e12 if info.peak_flops_per_s else 'unknown'} TFLOP/s"
    )
