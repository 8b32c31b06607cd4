"""Where this process sits in the job, its device and its process group.

Under ``torchrun`` the rank, world size and local ranks come from its environment variables and
the process group from its rendezvous; started without torchrun the process is a one-rank job
with an in-memory store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from trainscale.bench.config import BenchConfig
from trainscale.errors import TrainscaleError

__all__ = ["DistEnv", "init_process_group", "select_device"]


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


def select_device(config: BenchConfig, env: DistEnv) -> torch.device:
    """This rank's device: its local GPU on CUDA; on the CPU, with ``config.threads`` intra-op
    threads, or the CPUs available to the process divided by the local ranks.

    Raises
    ------
    TrainscaleError
        CUDA was asked for but PyTorch sees no CUDA device.
    """
    if config.device == "cuda":
        if not torch.cuda.is_available():
            raise TrainscaleError("bench: --device cuda, but PyTorch sees no CUDA device")
        device = torch.device("cuda", env.local_rank)
        torch.cuda.set_device(device)
        return device
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    torch.set_num_threads(config.threads or max(1, cpus // env.local_world_size))
    return torch.device("cpu")


def init_process_group(config: BenchConfig, env: DistEnv, device: torch.device) -> None:
    """Join torchrun's process group, or make a one-rank group without torchrun."""
    if env.launched:
        dist.init_process_group(config.backend, device_id=device if device.type == "cuda" else None)
    else:
        dist.init_process_group(config.backend, store=dist.HashStore(), rank=0, world_size=1)
