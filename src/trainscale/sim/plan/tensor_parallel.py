"""Tensor parallelism (with or without sequence parallelism): its collectives per block pass and
what of them stays on the critical path.

TP collectives sit on the compute stream's critical path: without ``tp_comm_overlap`` they are
fully exposed; with it they are pipelined with their GEMMs in ``tp`` chunks. Arrays are float64
of shape ``(n,)``, seconds per block per micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainscale.schema import Recompute
from trainscale.sim.configs.arrays import PlanArrays
from trainscale.sim.model.work import BlockWork
from trainscale.sim.plan.layout import Layout
from trainscale.sim.plan.streams import only_where
from trainscale.sim.system.collectives import Network, allgather_time, allreduce_time

__all__ = ["TensorParallel", "tensor_parallel", "tensor_parallel_exposed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorParallel:
    """TP collective time of one block per micro-batch, by kind and pass: float64 arrays of
    shape ``(n,)``, seconds; 0 where ``tp`` is 1 or the kind does not run (AllGather and
    ReduceScatter under sequence parallelism, AllReduce without)."""

    allgather_fwd_s: np.ndarray
    reducescatter_fwd_s: np.ndarray
    allreduce_fwd_s: np.ndarray
    allgather_bwd_s: np.ndarray
    """Backward, the recomputed forward's included."""
    reducescatter_bwd_s: np.ndarray
    allreduce_bwd_s: np.ndarray

    @property
    def busy_fwd_s(self) -> np.ndarray:
        """All forward TP collectives of one block."""
        return self.allgather_fwd_s + self.reducescatter_fwd_s + self.allreduce_fwd_s

    @property
    def busy_bwd_s(self) -> np.ndarray:
        """All backward TP collectives of one block."""
        return self.allgather_bwd_s + self.reducescatter_bwd_s + self.allreduce_bwd_s


def tensor_parallel(
    plan: PlanArrays, hidden: np.ndarray, w: BlockWork, place: Layout, net: Network
) -> TensorParallel:
    """Per block per micro-batch TP collective times (forward, backward) by kind, from the plan's
    ``tp``, ``sequence_parallel``, ``fp8`` and ``recompute`` and the model's ``hidden``.

    Under FP8 the sequence-parallel AllGathers move the FP8 cast of their tensor, 1 byte per
    element: Transformer Engine gathers the FP8 output of the norm (forward) and of the output
    gradient (backward), and torchao's ``Float8ColwiseParallel`` / ``Float8RowwiseParallel``
    (torchtitan's TP under Float8) cast before the all-gather ("all-gather in float8"). The
    ReduceScatters sum GEMM outputs in bf16, 2 bytes.
    """
    size = 2.0 * w.tokens * hidden
    on = plan.tp > 1
    sp = plan.sequence_parallel & on
    group = (size, plan.tp, place.tp_per_node, net)
    gathered = np.where(plan.fp8, 0.5, 1.0) * size
    ag = only_where(sp, allgather_time, gathered, plan.tp, place.tp_per_node, net)
    # A ring ReduceScatter of a buffer costs the AllGather of the same buffer (reducescatter_time).
    rs = only_where(sp, allgather_time, *group)
    ar = only_where(on & ~sp, allreduce_time, *group)
    passes_bwd = np.where(
        plan.recompute == Recompute.FULL, 2.0, 1.0
    )  # the recomputed forward repeats them
    return TensorParallel(
        allgather_fwd_s=np.where(sp, 2.0 * ag, 0.0),
        reducescatter_fwd_s=np.where(sp, 2.0 * rs, 0.0),
        allreduce_fwd_s=np.where(sp, 0.0, 2.0 * ar),
        allgather_bwd_s=np.where(sp, 2.0 * ag * passes_bwd, 0.0),
        reducescatter_bwd_s=np.where(sp, 2.0 * rs * passes_bwd, 0.0),
        allreduce_bwd_s=np.where(sp, 0.0, 2.0 * ar * passes_bwd),
    )


def tensor_parallel_exposed(
    tp: np.ndarray, tp_comm_overlap: np.ndarray, busy: np.ndarray, gemm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exposed TP communication of one block pass and the GEMM time it overlaps.

    Without overlap every TP collective sits on the critical path. With ``tp_comm_overlap``
    (Transformer Engine userbuffers, torchtitan AsyncTP) each all-gather/reduce-scatter is split
    into ``tp`` chunks exchanged while the GEMM runs on the chunks already received: only the first
    chunk, ``busy / tp``, and whatever the GEMMs cannot cover stay exposed.
    """
    degree = tp.astype(np.float64)
    overlapped = np.minimum(busy * (1.0 - 1.0 / degree), gemm)
    exposed = busy - overlapped
    on = tp_comm_overlap & (tp > 1)
    return np.where(on, exposed, busy), np.where(on, overlapped, 0.0)
