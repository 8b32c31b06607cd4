"""The memory margin a predicted plan should leave: how close to the GPU's capacity is too close.

A leaf module (no simulator import), so that the study points table and the command line read the
same margin."""

from __future__ import annotations

__all__ = ["NEAR_MEMORY_FRACTION", "near_memory_limit"]

#: A plan using more than this fraction of the GPU's HBM is flagged ``near_memory_limit`` (study
#: points, :mod:`trainscale.tables.study_points`; the breakdown of ``trainscale predict``): the
#: simulator's memory model counts weights, gradients, optimizer state, activations and a fixed
#: overhead, not allocator fragmentation or transient buffers, which in practice take several GiB
#: (PyTorch's CUDA caching allocator rounds and splits blocks; NCCL and cuBLAS workspaces grow
#: with the job), so a plan within 10 % of the capacity may not run as predicted.
NEAR_MEMORY_FRACTION = 0.9


def near_memory_limit(mem_gib_per_gpu: float, hbm_gib: float) -> bool:
    """Whether a plan using ``mem_gib_per_gpu`` GiB per GPU of a GPU with ``hbm_gib`` GiB is
    within the margin :data:`NEAR_MEMORY_FRACTION` leaves (scalars; the points table applies the
    same comparison to columns)."""
    return bool(mem_gib_per_gpu > NEAR_MEMORY_FRACTION * hbm_gib)
