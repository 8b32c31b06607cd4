"""The harness's training loop: synthetic tokens, AdamW, honest timing, logs and manifest.

One call of :func:`run_bench` per process. Under ``torchrun`` every rank calls it (the process
group comes from torchrun's environment, :mod:`~trainscale.bench.distributed`); started without
torchrun it runs as a one-rank job.

What a step is, and how it is timed:

- each data-parallel rank trains on one fixed batch of random tokens, split into ``grad_accum``
  micro-batches (:mod:`~trainscale.bench.step`); the model memorises it, so the loss falls step
  after step — a check that the harness really trains;
- forward and backward per micro-batch (gradient sync only on the last), gradient clipping to
  norm 1, AdamW step; on CUDA under bf16 autocast (FSDP gathers parameters in bf16), on CPU in
  fp32; the loss is averaged over ranks with an all-reduce;
- the step's wall time is ``time.perf_counter()`` at its end — after ``torch.cuda.synchronize``
  on CUDA — minus the previous step's end, so consecutive steps tile the run: the logging of a
  step is paid by the next one, and the steady-state window (after the warm-up) is exactly the
  sum of its steps (torchtitan's ``time_delta`` convention; :mod:`~trainscale.bench.timing`).

The harness's own summary (manifest ``harness_timing``) is computed on rank 0 from that window:
``tokens_per_s`` = tokens trained by the job ÷ the window's wall time. The logged per-step
``tps`` come from the same clock, step by step, so the ingested median and the harness's total
agree when the steps are steady; :func:`trainscale.ingest.runs.ingest_run` recovers the former from
the log alone.
"""

from __future__ import annotations

import gc
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from trainscale.bench.config import BenchConfig, BenchPlan, plan_bench
from trainscale.bench.device import DeviceInfo, describe_device, peak_memory
from trainscale.bench.distributed import DistEnv, init_process_group, select_device
from trainscale.bench.instruments import STEP_LOG, gather_files, start_power, trace_window
from trainscale.bench.logging import StepLogger
from trainscale.bench.manifest import harness_purpose, write_manifest
from trainscale.bench.model import LlamaDecoder, ModelShapeArgs
from trainscale.bench.parallel import (
    apply_data_parallel,
    apply_tensor_parallel,
    build_mesh,
    check_tensor_parallel_support,
)
from trainscale.bench.profile import TraceWindow
from trainscale.bench.record import cluster, configuration, log_settings
from trainscale.bench.step import MicroBatch, synthetic_batches, train_step
from trainscale.bench.timing import StepClock, StepRates, harness_timing
from trainscale.errors import TrainscaleError
from trainscale.sim.model.flops import model_flops_per_token

__all__ = ["BenchResult", "run_bench"]

#: Python's cyclic GC runs every this many steps (generation 1), never in between.
_GC_EVERY = 50


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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """What every part of one rank's run is handed."""

    config: BenchConfig
    plan: BenchPlan
    env: DistEnv
    device: torch.device
    info: DeviceInfo
    logger: StepLogger | None
    """Rank 0's step log; None on the other ranks."""

    @property
    def cuda(self) -> bool:
        """The run is on a GPU."""
        return self.device.type == "cuda"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Trainee:
    """The parallelised model, its parameters, optimizer and size."""

    model: torch.nn.Module
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    n_params: int
    """Parameters of the whole model (before sharding)."""


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
    device = select_device(config, env)
    init_process_group(config, env, device)
    try:
        return _run(config, plan, env, device)
    finally:
        dist.destroy_process_group()


def _run(config: BenchConfig, plan: BenchPlan, env: DistEnv, device: torch.device) -> BenchResult:
    info = describe_device(device, peak_tflops=config.peak_tflops)
    dist.barrier()  # every rank has checked the (empty) output folder
    if env.rank == 0:
        (config.out_dir / "logs").mkdir(parents=True, exist_ok=True)
        if config.profile_steps:
            (config.out_dir / "traces").mkdir(parents=True, exist_ok=True)
    dist.barrier()
    logger = StepLogger(config.out_dir / STEP_LOG) if env.rank == 0 else None
    job = _Job(config=config, plan=plan, env=env, device=device, info=info, logger=logger)
    try:
        return _train(job)
    finally:
        if logger is not None:
            logger.close()


def _build_model(job: _Job) -> _Trainee:
    """The decoder, initialised alike on every rank, parallelised, with its AdamW."""
    config, device = job.config, job.device
    mesh = build_mesh(
        device.type,
        world_size=job.env.world_size,
        tp=config.tp,
        sharding=config.sharding,
        nodes=job.env.nodes,
    )
    if config.tp > 1:
        check_tensor_parallel_support(mesh["tp"], device)
    with device:
        model = LlamaDecoder(ModelShapeArgs(shape=config.shape, seq_len=config.seq_len))
    model.init_weights(torch.Generator(device=device).manual_seed(config.seed))
    n_params = sum(p.numel() for p in model.parameters())
    if config.tp > 1:
        apply_tensor_parallel(model, mesh["tp"])
    model = apply_data_parallel(model, mesh, sharding=config.sharding, device=device)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=config.lr, betas=(0.9, 0.95), weight_decay=0.0)
    return _Trainee(model=model, params=params, optimizer=optimizer, n_params=n_params)


def _train(job: _Job) -> BenchResult:
    config, env = job.config, job.env
    trainee = _build_model(job)
    dp_index = env.rank // config.tp  # tp is the innermost mesh axis
    micro = synthetic_batches(config, job.plan, dp_index, job.device)
    flops_per_token = float(model_flops_per_token(config.shape, config.seq_len))
    sampler = start_power(config, env, job.device)
    window = trace_window(config, env, job.device)
    if job.logger is not None:
        log_settings(
            job.logger, config, job.plan, env, job.info,
            n_params=trainee.n_params, flops_per_token=flops_per_token,
        )  # fmt: skip
        if sampler is None and job.cuda and config.power_interval_ms:
            job.logger.warning("no power log: NVML is not available (see the warning on stderr)")
    step_times, losses, elapsed_s = _timed_steps(job, trainee, micro, window, flops_per_token)
    if window is not None:
        window.close()
    polls = sampler.stop() if sampler is not None else 0
    timing = harness_timing(
        step_times[config.warmup_steps :], elapsed_s, plan=job.plan, info=job.info,
        world_size=env.world_size, flops_per_token=flops_per_token, n_params=trainee.n_params,
    )  # fmt: skip
    files = gather_files(env, window, polls)
    hosts: list[str] = [""] * env.world_size
    dist.all_gather_object(hosts, socket.gethostname())
    manifest_path = _write_manifest(job, timing, files, hosts) if job.logger is not None else None
    dist.barrier()
    return BenchResult(
        step_times_s=step_times, losses=losses, manifest_path=manifest_path, timing=timing
    )


def _timed_steps(
    job: _Job,
    trainee: _Trainee,
    micro: list[MicroBatch],
    window: TraceWindow | None,
    flops_per_token: float,
) -> tuple[list[float], list[float], float]:
    """Every step, each logged on rank 0; returns the steps' wall times (s), their losses (mean
    over ranks) and the wall time of the timed window after the warm-up (s)."""
    config, env, info = job.config, job.env, job.info
    tokens_per_rank = job.plan.local_batch * config.seq_len
    step_times, losses = [], []
    # Python's cyclic GC would pause a random step for tens of ms: collect now, then only
    # every _GC_EVERY steps (torchtitan's GarbageCollection does the same).
    gc.collect()
    gc.disable()
    dist.barrier()
    clock = StepClock(job.device, warmup_steps=config.warmup_steps)
    for step in range(1, config.steps + 1):
        loss_sum, grad_norm = train_step(
            trainee.model, micro, trainee.optimizer, trainee.params,
            sharding=config.sharding, cuda=job.cuda,
        )  # fmt: skip
        if window is not None:
            window.step()
        if step % _GC_EVERY == 0:
            gc.collect(1)
        dist.all_reduce(loss_sum)  # SUM: gloo has no AVG
        loss_value = loss_sum.item() / env.world_size
        step_time = clock.lap(step)
        step_times.append(step_time)
        losses.append(loss_value)
        memory_gib, memory_pct = peak_memory(job.device, info)  # every rank: resets the peak
        if job.logger is not None:
            rates = StepRates.of(
                tokens_per_rank=tokens_per_rank, step_time_s=step_time, tp=config.tp,
                flops_per_token=flops_per_token, peak_flops_per_s=info.peak_flops_per_s,
            )  # fmt: skip
            job.logger.step(
                step=step, loss=loss_value, grad_norm=grad_norm, memory_gib=memory_gib,
                memory_pct=memory_pct, tps=rates.tps, tflops=rates.tflops, mfu_pct=rates.mfu_pct,
            )  # fmt: skip
    gc.enable()
    return step_times, losses, clock.window_s


def _write_manifest(
    job: _Job, timing: dict[str, Any], files: list[dict[str, Any]], hosts: list[str]
) -> Path:
    """Rank 0: log the summary and write ``run.yaml``; return its path."""
    assert job.logger is not None
    config = job.config
    job.logger.info(
        f"harness timing: {timing['steps']} steps after {config.warmup_steps} warm-up, "
        f"{timing['elapsed_s']} s, {timing['tokens_per_s']:,} tokens/s "
        f"({timing['tokens_per_s_per_gpu']:,} per rank), mean step {timing['step_time_s']} s,"
        f" median {timing['step_time_s_median']} s"
    )
    manifest_path = write_manifest(
        config.out_dir,
        run_id=config.run_id,
        purpose=harness_purpose(job.info.type),
        description=config.description,
        configuration=configuration(config, job.plan, job.env, job.info),
        cluster=cluster(config, job.env, job.info, hosts),
        logs=files,
        warmup_steps=config.warmup_steps,
        trace_warmup_steps=0,
        harness_timing=timing,
    )
    job.logger.info(f"manifest: {manifest_path}")
    return manifest_path
