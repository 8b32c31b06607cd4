"""The memory margins: how close to the GPU's capacity is too close, and how far beyond it a
prediction may go before the plan is rejected.

A leaf module (no simulator import), so that the simulator, the study points table and the command
line read the same margins.

The memory model (:mod:`trainscale.sim.model.memory`) counts weights, gradients, optimizer
states, activations, logits and a fixed overhead. Against the published peak-memory figures in
``data/published/memory.csv`` (torchtitan's benchmark tables, maximum reserved memory) it misses
by −38 % to +40 % (``docs/accuracy.md``, "Memory"): it over-counts what PyTorch's op-level
selective recomputation keeps and under-counts the allocator's reserve and the transient buffers
of fully recomputed long-sequence runs. So a prediction above the GPU's capacity is evidence that
the plan does not fit only beyond the largest over-prediction measured on published runs:

- up to :data:`MEMORY_REJECT_FRACTION` × HBM a plan is kept (``fits_memory`` true) and, above the
  calibration's ``memory_usable_fraction`` × HBM, flagged ``memory:R>U`` in its ``extrapolation``
  column (``R`` the predicted bytes over HBM, 3 significant digits; ``U`` the usable fraction);
- beyond it, the plan is rejected (``fits_memory`` false).
"""

from __future__ import annotations

__all__ = ["MEMORY_REJECT_FRACTION", "NEAR_MEMORY_FRACTION", "near_memory_limit"]

#: A plan using more than this fraction of the GPU's HBM is flagged ``near_memory_limit`` (study
#: points, :mod:`trainscale.tables.study_points`; the breakdown of ``trainscale predict``): the
#: simulator's memory model counts weights, gradients, optimizer state, activations and a fixed
#: overhead, not allocator fragmentation or transient buffers, which in practice take several GiB
#: (PyTorch's CUDA caching allocator rounds and splits blocks; NCCL and cuBLAS workspaces grow
#: with the job), so a plan within 10 % of the capacity may not run as predicted.
NEAR_MEMORY_FRACTION = 0.9

#: Predicted bytes over HBM beyond which a plan is rejected: 1 + the largest over-prediction of
#: the memory model on the published peak-memory figures (+39.6 %, torchtitan's Table 3, Llama
#: 3.1 8B with op-level selective recomputation and torch.compile; ``docs/accuracy.md``), rounded
#: up to a percent. ``tests/published/test_memory.py`` recomputes it from the data.
MEMORY_REJECT_FRACTION = 1.40


def near_memory_limit(mem_gib_per_gpu: float, hbm_gib: float) -> bool:
    """Whether a plan using ``mem_gib_per_gpu`` GiB per GPU of a GPU with ``hbm_gib`` GiB is
    within the margin :data:`NEAR_MEMORY_FRACTION` leaves (scalars; the points table applies the
    same comparison to columns)."""
    return bool(mem_gib_per_gpu > NEAR_MEMORY_FRACTION * hbm_gib)
