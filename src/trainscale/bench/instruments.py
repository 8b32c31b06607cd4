"""The run's instruments besides the step log — the NVML power sampler and the Kineto trace
window — and every rank's output files as the manifest's log entries."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from trainscale.bench.config import BenchConfig
from trainscale.bench.distributed import DistEnv
from trainscale.bench.power import PowerSampler, open_nvml
from trainscale.bench.profile import TraceWindow

__all__ = ["STEP_LOG", "gather_files", "start_power", "trace_window"]

#: Rank 0's torchtitan-format step log, relative to the run folder.
STEP_LOG = "logs/steps_rank0.log"


def start_power(config: BenchConfig, env: DistEnv, device: torch.device) -> PowerSampler | None:
    """Local rank 0 of each node samples the node's job GPUs (CUDA only); None elsewhere, with
    ``power_interval_ms`` 0, or where NVML is not available."""
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


def trace_window(config: BenchConfig, env: DistEnv, device: torch.device) -> TraceWindow | None:
    """This rank's profiler window over warm-up steps, or None without ``profile_steps``."""
    if not config.profile_steps:
        return None
    return TraceWindow(
        config.out_dir / "traces" / f"trace_rank{env.rank}.json.gz",
        profile_steps=config.profile_steps,
        warmup_steps=config.warmup_steps,
        cuda=device.type == "cuda",
    )


def gather_files(env: DistEnv, window: TraceWindow | None, polls: int) -> list[dict[str, Any]]:
    """Every rank's output files, as manifest log entries (the same list on every rank)."""
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
