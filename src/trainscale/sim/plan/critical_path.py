"""The critical path of one block on the compute stream: its compute, stretched by the host's
kernel launches and by the collectives it overlaps, plus the tensor-parallel collectives and the
exposed context-parallel exchange.

Arrays are float64 of shape ``(n,)``, seconds per block per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainscale.sim.plan.block_compute import BlockCompute
from trainscale.sim.plan.context_parallel import ContextParallel
from trainscale.sim.plan.data_parallel import DataParallel
from trainscale.sim.plan.tensor_parallel import TensorParallel, tensor_parallel_exposed

__all__ = ["BlockPath", "block_path"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockPath:
    """One block's critical path per micro-batch: float64 arrays of shape ``(n,)``, seconds."""

    fwd_compute_s: np.ndarray
    """Forward compute (dense plus memory-bound)."""
    bwd_compute_s: np.ndarray
    """Backward compute, recomputation included."""
    fwd_gpu_s: np.ndarray
    """Forward compute, or the host's time to launch it where that is longer."""
    bwd_gpu_s: np.ndarray
    """Backward compute, or the host's time to launch it."""
    fwd_slowdown_s: np.ndarray
    """What the collectives the forward overlaps add to its compute (SMs they take)."""
    bwd_slowdown_s: np.ndarray
    """The same for the backward."""
    fwd_tp_exposed_s: np.ndarray
    """Exposed tensor-parallel collectives of the forward."""
    bwd_tp_exposed_s: np.ndarray
    """Exposed tensor-parallel collectives of the backward."""
    fwd_critical_s: np.ndarray
    """The forward's critical path: GPU time, slowdown, exposed TP and CP."""
    bwd_critical_s: np.ndarray
    """The backward's critical path."""

    @property
    def host_stall_s(self) -> np.ndarray:
        """What the GPU waits for the host's kernel launches, forward and backward."""
        return (self.fwd_gpu_s - self.fwd_compute_s) + (self.bwd_gpu_s - self.bwd_compute_s)


def block_path(
    tp_degree: np.ndarray,
    tp_comm_overlap: np.ndarray,
    host_overhead_s: np.ndarray,
    comp: BlockCompute,
    tp: TensorParallel,
    cp: ContextParallel,
    dp: DataParallel,
    slow: np.ndarray,
) -> BlockPath:
    """The critical path of one block: compute plus TP collectives plus the exposed CP
    exchange; ``slow`` is the overlap slowdown (compute overlapped by a collective runs that
    much slower). The host launches kernels ahead of the GPU: when a block's GPU time is shorter
    than the CPU time to launch it (``host_overhead_s``, a third in forward) the GPU waits."""
    overlap = (tp_degree, tp_comm_overlap)
    tp_fwd, tp_fwd_hidden = tensor_parallel_exposed(*overlap, tp.busy_fwd_s, comp.gemm_fwd_s)
    tp_bwd, tp_bwd_hidden = tensor_parallel_exposed(*overlap, tp.busy_bwd_s, comp.gemm_bwd_s)
    f_comp = comp.fwd_dense_s + comp.fwd_memory_s
    b_comp = comp.bwd_dense_s + comp.bwd_memory_s
    host = host_overhead_s
    f_gpu = np.maximum(f_comp, host / 3.0)
    b_gpu = np.maximum(b_comp, 2.0 * host / 3.0)
    f_slow = slow * (np.minimum(dp.comm_fwd_s, f_comp) + tp_fwd_hidden)
    b_slow = slow * (np.minimum(dp.comm_bwd_s, b_comp) + tp_bwd_hidden)
    return BlockPath(
        fwd_compute_s=f_comp,
        bwd_compute_s=b_comp,
        fwd_gpu_s=f_gpu,
        bwd_gpu_s=b_gpu,
        fwd_slowdown_s=f_slow,
        bwd_slowdown_s=b_slow,
        fwd_tp_exposed_s=tp_fwd,
        bwd_tp_exposed_s=tp_bwd,
        fwd_critical_s=f_gpu + f_slow + tp_fwd + cp.exposed_fwd_s,
        bwd_critical_s=b_gpu + b_slow + tp_bwd + cp.exposed_bwd_s,
    )
