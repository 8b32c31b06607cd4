"""Expert parallelism in the step: the MoE block's compute, its token exchange, and the expert
gradients, for the configurations whose model the dense block does not describe
(:class:`~trainscale.sim.model.moe_work.MoEWork`; every other row is left exactly as it was).

- **Compute.** The average block's GEMMs (attention projections, dense MLP, shared experts,
  router) on the roofline of :mod:`trainscale.sim.system.compute`; the routed experts as
  ``E/ep`` grouped GEMMs of ``r·load`` rows each (``load``: the busiest rank's rows over the
  mean, :mod:`trainscale.sim.plan.routing`), each at the efficiency of a dense GEMM of its
  shape times ``r / (r + r_half)`` (``moe_gemm_half_rows``: rows padded to the kernel's M tile
  and weights read for few rows make small per-expert GEMMs slow); causal FlashAttention with
  ``d_qk + d_v`` per head; memory-bound kernels including the routed rows' permutation and
  SwiGLU. Backward GEMMs are twice the forward, attention 2.5 times; recomputation as for dense
  blocks.
- **Exchange.** Dispatch and combine in forward and in backward
  (:func:`trainscale.sim.system.alltoall.dispatch_time`), for the MoE share of the blocks. They
  sit on the critical path (Megatron-Core, torchtitan and DeepSpeed-MoE wait for them), unless
  ``moe_a2a_overlap`` (Megatron-LM ``--overlap-moe-expert-parallel-comm``) runs one
  micro-batch's exchange beside another's compute in 1F1B's steady state (more than one
  micro-batch): then only what exceeds the block's compute is exposed, and the compute it
  overlaps is slowed by ``overlap_slowdown``.
- **Tensor parallelism.** An MoE block without a shared expert has no dense MLP: its tokens
  reach the experts by the dispatcher, so of the block's tensor-parallel collectives only the
  attention's pair remains (the expert tensor-parallel gather is the dispatcher's).
- **Expert gradients** are reduced over the expert data-parallel group (``edp`` ranks, of which
  ``min(edp, gpus_per_node / (ep·etp))`` share a node), the dense ones over ``dp·cp`` as before:
  DDP all-reduces and ZeRO-1 reduce-scatters (and all-gathers the updated weights) the stage's
  expert gradients once per step, hidden behind the last micro-batch's backward (and the next
  forward) where the stack overlaps them; ZeRO-2, FSDP and HSDP gather (and reduce-scatter) each
  block's experts per micro-batch on the data-parallel stream, beside the dense gathers. The
  optimizer step updates the ``1/edp`` (sharded) or all (DDP) of the expert weights held.

Arrays are float64 of shape ``(n,)`` over every configuration (zeros on dense rows), seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from trainscale.schema import Recompute, Sharding
from trainscale.sim.model.moe_work import MoEWork
from trainscale.sim.plan.block_compute import ATTENTION_BACKWARD_RATIO, BlockCompute
from trainscale.sim.plan.data_parallel import DataParallel
from trainscale.sim.plan.efficiency import Efficiencies
from trainscale.sim.plan.routing import routing_load
from trainscale.sim.plan.streams import only_where
from trainscale.sim.plan.tensor_parallel import TensorParallel
from trainscale.sim.system.alltoall import dispatch_time
from trainscale.sim.system.collectives import (
    Network,
    allgather_time,
    allreduce_time,
    reducescatter_time,
)
from trainscale.sim.system.compute import attention_time, gemm_time, memory_time

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.configs.arrays import ModelArrays, PlanArrays, StackArrays, SystemArrays

__all__ = ["ExpertSteps", "expert_parallel"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpertSteps:
    """What expert parallelism adds to the step: float64 arrays of shape ``(n,)``, 0 on dense
    rows; per block and micro-batch unless named ``step_``."""

    alltoall_s: np.ndarray
    """Dispatch and combine busy time of one block, forward plus backward."""
    exposed_alltoall_s: np.ndarray
    """What of it the compute stream waits for."""
    slowdown_s: np.ndarray
    """Compute slowed by the exchange it overlaps."""
    step_allreduce_s: np.ndarray
    """DDP's all-reduce of the stage's expert gradients over edp."""
    step_reducescatter_s: np.ndarray
    """ZeRO-1's reduce-scatter of them."""
    step_allgather_s: np.ndarray
    """ZeRO-1's all-gather of the updated expert weights."""
    step_exposed_s: np.ndarray
    """What of those no compute window covers."""
    step_optimizer_s: np.ndarray
    """The optimizer step over the expert weights this GPU updates."""
    load: np.ndarray
    """The busiest expert-parallel rank's rows over the mean (1 on dense rows)."""


def _scatter(n: int, rows: np.ndarray, values: np.ndarray, fill: float = 0.0) -> np.ndarray:
    out = np.full(n, fill)
    out[rows] = values
    return out


def _moe_compute(
    comp: BlockCompute, mw: MoEWork, load: np.ndarray, *, recompute: np.ndarray,
    system: SystemArrays, eff: Efficiencies, cal: Calibration,
) -> BlockCompute:  # fmt: skip
    """``comp`` with the rows of ``mw`` replaced by the average MoE/MLA block's compute."""
    i = mw.rows
    kw = {"peak": system.peak_flops_per_s[i] * eff.clock_ratio[i], "eta_max": eff.gemm_max[i],
          "d0": system.gemm_half_efficiency_dim[i] * cal.gemm_size_scale,
          "hbm_bw": system.hbm_bytes_per_s[i], "exponent": cal.gemm_size_exponent}  # fmt: skip
    gemm_fwd = sum(count * gemm_time(m, n, k, **kw) for m, n, k, count in mw.gemms)
    rows = mw.expert_rows * load
    grouped = sum(gemm_time(rows, n, k, **kw) for n, k in (mw.expert_in, mw.expert_out))
    gemm_fwd = gemm_fwd + mw.moe_share * mw.local_experts * grouped * (
        (rows + cal.moe_gemm_half_rows) / rows
    )
    attn = attention_time(
        mw.attention_flops_fwd, peak=system.bf16_flops_per_s[i] * eff.clock_ratio[i],
        attention_efficiency=eff.attention[i],
    )  # fmt: skip
    routed_rows = mw.moe_share * mw.local_experts * rows
    mem = memory_time(
        eff.elementwise_traffic[i] * (mw.elementwise_bytes + mw.row_bytes * routed_rows),
        hbm_bw=system.hbm_bytes_per_s[i], hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    full, selective = recompute[i] == Recompute.FULL, recompute[i] == Recompute.SELECTIVE
    fwd_dense = gemm_fwd + attn
    new = {
        "gemm_fwd_s": gemm_fwd,
        "gemm_bwd_s": 2.0 * gemm_fwd,
        "attention_fwd_s": attn,
        "fwd_dense_s": fwd_dense,
        "fwd_memory_s": mem / 3.0,
        "bwd_dense_s": 2.0 * gemm_fwd
        + ATTENTION_BACKWARD_RATIO * attn
        + np.select([full, selective], [fwd_dense, attn], 0.0),
        "bwd_memory_s": 2.0 * mem / 3.0 + np.where(full, mem / 3.0, 0.0),
    }
    out = {}
    for f in fields(comp):
        value = getattr(comp, f.name)
        if f.name in new:
            value = value.copy()
            value[i] = new[f.name]
        out[f.name] = value
    return BlockCompute(**out)


def _expert_gathers(
    dp: DataParallel, mw: MoEWork, *, sharding: np.ndarray, stack: StackArrays,
    n: np.ndarray, g: np.ndarray, net: Network,
) -> DataParallel:  # fmt: skip
    """``dp`` with each block's sharded expert collectives over ``edp`` added on the rows of
    ``mw`` (ZeRO-2: gather in forward and reduce-scatter; FSDP/HSDP: gather again in backward)."""
    i = mw.rows
    s = sharding[i]
    sharded = (s == Sharding.FSDP) | (s == Sharding.HSDP)
    gathers = sharded | (s == Sharding.ZERO2)
    size = mw.expert_param_bytes
    ag = only_where(gathers & (size > 0), allgather_time, size, n, g, net)
    rs = only_where(gathers & (size > 0), reducescatter_time, size, n, g, net)
    prefetch, overlap = stack.overlap_param_gather[i], stack.overlap_grad_reduce[i]
    add = {
        "gather_fwd_s": ag,
        "gather_bwd_s": np.where(sharded, ag, 0.0),
        "reduce_bwd_s": rs,
        "comm_fwd_s": np.where(prefetch, ag, 0.0),
        "comm_bwd_s": np.where(prefetch & sharded, ag, 0.0) + np.where(overlap, rs, 0.0),
        "serial_fwd_s": np.where(prefetch, 0.0, ag),
        "serial_bwd_s": np.where(prefetch | ~sharded, 0.0, ag) + np.where(overlap, 0.0, rs),
    }
    out = {}
    for f in fields(dp):
        value = getattr(dp, f.name)
        if f.name in add:
            value = value.copy()
            value[i] = value[i] + add[f.name]
        out[f.name] = value
    return DataParallel(**out)


def _step_sync(
    mw: MoEWork, comp: BlockCompute, *, sharding: np.ndarray, stack: StackArrays,
    layers: np.ndarray, n: np.ndarray, g: np.ndarray, net: Network,
) -> dict[str, np.ndarray]:  # fmt: skip
    """DDP's and ZeRO-1's once-per-step expert collectives over ``edp`` on the rows of ``mw``:
    busy times and what the last backward (reductions) and the next forward (ZeRO-1's gather)
    leave exposed."""
    i = mw.rows
    s = sharding[i]
    ddp, zero1 = s == Sharding.DDP, s == Sharding.ZERO1
    size = layers[i] * mw.expert_param_bytes
    some = (size > 0) & (n > 1)
    ar = only_where(ddp & some, allreduce_time, size, n, g, net)
    rs = only_where(zero1 & some, reducescatter_time, size, n, g, net)
    ag = only_where(zero1 & some, allgather_time, size, n, g, net)
    bwd = layers[i] * (comp.bwd_dense_s[i] + comp.bwd_memory_s[i])
    fwd = layers[i] * (comp.fwd_dense_s[i] + comp.fwd_memory_s[i])
    reduce_window = np.where(stack.overlap_grad_reduce[i], bwd, 0.0)
    gather_window = np.where(stack.overlap_param_gather[i], fwd, 0.0)
    exposed = np.maximum(ar + rs - reduce_window, 0.0) + np.maximum(ag - gather_window, 0.0)
    return {"step_allreduce_s": ar, "step_reducescatter_s": rs, "step_allgather_s": ag,
            "step_exposed_s": exposed}  # fmt: skip


def _exchange(
    mw: MoEWork, comp: BlockCompute, load: np.ndarray, *, model: ModelArrays, plan: PlanArrays,
    stack: StackArrays, system: SystemArrays, net: Network, eff: Efficiencies, cal: Calibration,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Each block's dispatch and combine, forward and backward, on the rows of ``mw``: busy,
    exposed and the compute slowdown under overlap."""
    i = mw.rows
    one = dispatch_time(
        stack.moe_dispatcher[i], routed_tokens=mw.routed_tokens, hidden=model.hidden[i],
        k=model.experts_per_token[i], load=load, ep=plan.ep[i], etp=plan.etp[i],
        gpus_per_node=system.gpus_per_node[i], net=net.take(i),
        efficiency=cal.alltoall_efficiency,
    )  # fmt: skip
    busy = 4.0 * mw.moe_share * one
    compute = (
        comp.fwd_dense_s[i] + comp.fwd_memory_s[i] + comp.bwd_dense_s[i] + comp.bwd_memory_s[i]
    )
    overlap = stack.moe_a2a_overlap[i] & (plan.grad_accum[i] > 1)
    return {
        "alltoall_s": busy,
        "exposed_alltoall_s": np.where(overlap, np.maximum(busy - compute, 0.0), busy),
        "slowdown_s": np.where(overlap, eff.overlap_slowdown[i] * np.minimum(busy, compute), 0.0),
    }


def _tensor_parallel(tp: TensorParallel, mw: MoEWork, shared_ffn: np.ndarray) -> TensorParallel:
    """``tp`` without the MLP's pair of collectives (half of a block's) in the MoE blocks of the
    rows of ``mw`` that have no shared expert: their tokens reach the experts by the dispatcher
    (whose expert tensor-parallel gather :func:`~trainscale.sim.system.alltoall.dispatch_time`
    counts), not by the dense MLP's sequence-parallel gather and reduce-scatter; a shared expert
    is a tensor-parallel MLP and keeps them."""
    i = mw.rows
    keep = 1.0 - 0.5 * mw.moe_share * (shared_ffn[i] == 0)
    out = {}
    for f in fields(tp):
        value = getattr(tp, f.name).copy()
        value[i] = value[i] * keep
        out[f.name] = value
    return TensorParallel(**out)


def expert_parallel(
    w_moe: MoEWork | None, comp: BlockCompute, tp: TensorParallel, dp: DataParallel, *,
    model: ModelArrays,
    plan: PlanArrays, stack: StackArrays, system: SystemArrays, net: Network,
    eff: Efficiencies, cal: Calibration, layers: np.ndarray,
) -> tuple[BlockCompute, TensorParallel, DataParallel, ExpertSteps]:  # fmt: skip
    """The block compute, tensor- and data-parallel collectives with the rows of ``w_moe``
    replaced or extended, and what expert parallelism adds to the step (module docstring);
    ``layers`` the blocks on the slowest stage. Dense rows come back untouched and get zeros."""
    total = len(comp.gemm_fwd_s)
    zeros = {f.name: np.zeros(total) for f in fields(ExpertSteps)} | {"load": np.ones(total)}
    if w_moe is None:
        return comp, tp, dp, ExpertSteps(**zeros)
    i = w_moe.rows
    rows_per_rank = w_moe.local_experts * w_moe.expert_rows
    load = routing_load(
        plan.moe_routing[i], plan.capacity_factor[i], experts=model.num_experts[i],
        ep=plan.ep[i], rows_per_rank=rows_per_rank, cv=cal.expert_load_cv,
    )  # fmt: skip
    comp = _moe_compute(comp, w_moe, load, recompute=plan.recompute, system=system, eff=eff,
                        cal=cal)  # fmt: skip
    group_per_node = np.maximum(system.gpus_per_node[i] // (plan.ep[i] * plan.etp[i]), 1)
    n, g = plan.edp[i], np.minimum(plan.edp[i], group_per_node)
    sub = net.take(i)
    dp = _expert_gathers(dp, w_moe, sharding=plan.sharding, stack=stack, n=n, g=g, net=sub)
    values = _step_sync(w_moe, comp, sharding=plan.sharding, stack=stack, layers=layers, n=n,
                        g=g, net=sub)  # fmt: skip
    values |= _exchange(w_moe, comp, load, model=model, plan=plan, stack=stack, system=system,
                        net=net, eff=eff, cal=cal)  # fmt: skip
    s = plan.sharding[i]
    shard = np.where(s == Sharding.DDP, 1.0, n.astype(np.float64))
    values["step_optimizer_s"] = memory_time(
        cal.optimizer_bytes_per_param * layers[i] * w_moe.expert_param_bytes / 2.0 / shard,
        hbm_bw=system.hbm_bytes_per_s[i], hbm_efficiency=cal.hbm_efficiency,
    )  # fmt: skip
    values["load"] = load
    out = {name: _scatter(total, i, values[name], 1.0 if name == "load" else 0.0)
           for name in zeros}  # fmt: skip
    tp = _tensor_parallel(tp, w_moe, model.shared_ffn)
    return comp, tp, dp, ExpertSteps(**out)
