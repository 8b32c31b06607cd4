"""What a run records besides its step lines: the settings at the top of the step log and the
manifest's ``configuration`` and ``cluster`` sections."""

from __future__ import annotations

import contextlib
import platform
from typing import Any

import torch

from trainscale.bench.config import SHAPE_FIELDS, BenchConfig, BenchPlan
from trainscale.bench.device import DeviceInfo
from trainscale.bench.distributed import DistEnv
from trainscale.bench.logging import StepLogger
from trainscale.version import __version__

__all__ = ["cluster", "configuration", "log_settings", "shape_matches_catalogue"]


def shape_matches_catalogue(config: BenchConfig) -> bool:
    """Whether the run's shape is its catalogue model's, unchanged (untied embeddings)."""
    from trainscale.sim.model.shape import load_models

    model = load_models().get(config.model)
    return model is not None and not model.tied_embeddings and model.transformer == config.shape


def configuration(
    config: BenchConfig, plan: BenchPlan, env: DistEnv, info: DeviceInfo
) -> dict[str, Any]:
    """The manifest's ``configuration``: configuration-table names and values."""
    cfg: dict[str, Any] = {}
    if shape_matches_catalogue(config):
        cfg["model"] = config.model  # a cut or changed catalogue model is given by its shape
    cfg.update({name: getattr(config.shape, name) for name in SHAPE_FIELDS})
    cfg.update(
        mlp="swiglu", seq_len=config.seq_len, global_batch=plan.global_batch,
        micro_batch=config.micro_batch,
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


def _software(info: DeviceInfo) -> dict[str, str]:
    """Versions of the software stack: trainscale, torch, Python; CUDA, NCCL, the driver."""
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
    return software


def cluster(
    config: BenchConfig, env: DistEnv, info: DeviceInfo, hosts: list[str]
) -> dict[str, Any]:
    """The manifest's ``cluster``: nodes, device, host names (``hosts``: one per rank), the
    software, and on one host or the CPU a note on the interconnect and the run."""
    node_hosts = hosts[:: env.local_world_size]
    section: dict[str, Any] = {
        "nodes": env.nodes,
        "gpus_per_node": env.local_world_size,
        "device_name": str(info.name),
        "hostnames": [str(h) for h in node_hosts],
        "software": _software(info),
    }
    if env.nodes == 1:
        section["interconnect"] = (
            "loopback (one host)" if info.type == "cpu" else "intra-node only (one host)"
        )
    if info.type == "cpu":
        section["notes"] = (
            f"CPU run: {env.local_world_size} process(es) per host with "
            f"{torch.get_num_threads()} intra-op thread(s) each, {config.backend} backend, fp32. "
            "The step lines' memory is each process's peak resident set size; mfu is printed "
            "as 0.00% because a CPU has no catalogue peak."
        )
    return section


def log_settings(
    logger: StepLogger,
    config: BenchConfig,
    plan: BenchPlan,
    env: DistEnv,
    info: DeviceInfo,
    *,
    n_params: int,
    flops_per_token: float,
) -> None:
    """The step log's first lines: the job, the model, the plan, the steps and instruments."""
    shape = config.shape
    logger.info(
        f"trainscale bench {__version__}: {env.world_size} rank(s) on {env.nodes} node(s), "
        f"{config.device} ({info.name}), backend {config.backend}, torch {torch.__version__}"
    )
    logger.info(
        f"model: {shape.layers} layers, hidden {shape.hidden}, heads {shape.heads}/"
        f"{shape.kv_heads} kv, ffn {shape.ffn}, vocab {shape.vocab}, {n_params:,} params, "
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
