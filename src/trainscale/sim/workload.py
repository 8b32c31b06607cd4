"""The work and the FLOPs of every configuration: the dense block's
(:mod:`trainscale.sim.model.work`, :mod:`trainscale.sim.model.flops`), and for the rows whose
model it does not describe (a mixture of experts, multi-head latent attention, heads not
``hidden / heads`` wide) the average block of :mod:`trainscale.sim.model.moe_work` and the FLOPs
of :func:`trainscale.sim.model.counts.model_flops_per_token`. Dense rows are computed exactly as
without the other rows."""

from __future__ import annotations

import numpy as np

from trainscale.schema import Recompute
from trainscale.sim.configs import Configs
from trainscale.sim.model.flops import hardware_flops_per_token, model_flops_per_token
from trainscale.sim.model.moe_work import MoEWork, described, moe_work, with_moe_work
from trainscale.sim.model.params import TransformerShape
from trainscale.sim.model.work import BlockWork, block_work

__all__ = ["flops_per_token", "workload"]


def workload(c: Configs) -> BlockWork:
    """One GPU's work per micro-batch: the dense block's, and for the rows whose model it does
    not describe (mixture of experts, MLA, wider heads) the average block of
    :mod:`trainscale.sim.model.moe_work`."""
    work = block_work(c.model, c.plan, c.stack)
    m, p = c.model, c.plan
    rows = np.flatnonzero(described(m.num_experts, m.kv_lora_rank, m.head_dim, m.hidden, m.heads))
    if not rows.size:
        return work
    shape = {name: getattr(m, name) for name in _MOE_WORK_SHAPE}
    plan = {name: getattr(p, name) for name in _MOE_WORK_PLAN}
    return with_moe_work(
        work, moe_work(rows, shape=shape, plan=plan, fused_kernels=c.stack.fused_kernels)
    )


_MOE_WORK_SHAPE = (
    "layers", "hidden", "heads", "kv_heads", "ffn", "head_dim", "q_lora_rank", "kv_lora_rank",
    "qk_head_dim", "qk_rope_dim", "v_head_dim", "num_experts", "experts_per_token",
    "expert_ffn", "shared_ffn", "moe_layers",
)  # fmt: skip
_MOE_WORK_PLAN = (
    "micro_batch", "seq_len", "tp", "cp", "dp", "ep", "etp", "edp", "sequence_parallel",
)  # fmt: skip


def flops_per_token(
    c: Configs, shape: TransformerShape, moe: MoEWork | None
) -> tuple[np.ndarray, np.ndarray]:
    """Model and hardware FLOPs per token (:mod:`trainscale.sim.model.flops`); for the rows of
    ``moe`` :func:`trainscale.sim.model.counts.model_flops_per_token`'s (active weights,
    attention without the causal mask), recomputation adding the blocks' forward (``full``) or
    the attention core (``selective``)."""
    model = model_flops_per_token(shape, c.plan.seq_len)
    hardware = hardware_flops_per_token(shape, c.plan.seq_len, c.plan.recompute)
    if moe is None:
        return model, hardware
    i = moe.rows
    m = c.model
    active = m.active_matmul_params[i].astype(np.float64)
    scores = 2.0 * m.layers[i] * c.plan.seq_len[i].astype(np.float64) * m.score_width[i]
    recompute = c.plan.recompute[i]
    block_forward = 2.0 * (active - m.vocab[i] * m.hidden[i].astype(np.float64)) + scores
    model, hardware = model.copy(), hardware.copy()
    model[i] = 6.0 * active + 3.0 * scores
    hardware[i] = model[i] + np.select(
        [recompute == Recompute.FULL, recompute == Recompute.SELECTIVE], [block_forward, scores],
        0.0,
    )  # fmt: skip
    return model, hardware
