"""Total and active parameters of a catalogue model, derived from its shape.

A dense model with ``head_dim = hidden / heads`` is counted by
:func:`trainscale.sim.model.params.total_params` (unchanged). A model with grouped-query
attention of another ``head_dim``, with multi-head latent attention
(:mod:`trainscale.sim.model.attention`) or with a mixture-of-experts MLP
(:mod:`trainscale.sim.model.moe`) is counted block by block:

- each block: its attention projections, two RMSNorms of ``hidden`` (plus the latent norms of
  MLA), and either a dense MLP (``ffn``; the first ``dense_layers`` blocks of an MoE model, every
  block of a dense one) or the MoE MLP (routed and shared experts and the router);
- the final norm (``hidden``) and the embeddings (``vocab x hidden``, twice when the LM head is
  not tied to the input embedding).

**Active** parameters are those one token passes through: the total less the routed experts a
token is not sent to (``num_experts - experts_per_token`` per MoE block). Like Mixtral, Qwen and
DeepSeek, it counts the input embedding; OpenAI's GPT-OSS model card counts only the LM head
(:func:`active_params` less ``vocab x hidden``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainscale.sim.model.attention import gqa_params, mla_norm_params, mla_params
from trainscale.sim.model.moe import moe_mlp_active_params, moe_mlp_params
from trainscale.sim.model.params import mlp_params_per_layer

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape

__all__ = [
    "active_matmul_params", "active_params", "attention_params", "block_norm_params",
    "block_params", "model_flops_per_token", "total_params_of",
]  # fmt: skip


def attention_params(m: ModelShape) -> int:
    """Weights of one block's attention projections (GQA with ``head_dim``, or MLA)."""
    if m.mla is not None:
        return mla_params(m.hidden, m.heads, m.mla)
    return gqa_params(m.hidden, m.heads, m.kv_heads, m.head_dim)


def block_norm_params(m: ModelShape) -> int:
    """Weights of one block's norms: two RMSNorms of ``hidden``, plus MLA's latent norms."""
    return 2 * m.hidden + (mla_norm_params(m.mla) if m.mla is not None else 0)


def block_params(m: ModelShape, *, moe_block: bool, active: bool = False) -> int:
    """Parameters of one block (attention, norms and MLP): a dense block, or an MoE block with
    every expert (``active`` False) or with the experts one token passes through."""
    norms = block_norm_params(m)
    if moe_block and m.moe is not None:
        counter = moe_mlp_active_params if active else moe_mlp_params
        mlp = counter(m.hidden, m.moe)
    else:
        mlp = int(mlp_params_per_layer(m.hidden, m.ffn, m.mlp == "swiglu"))
    return attention_params(m) + norms + mlp


def _count(m: ModelShape, *, active: bool) -> int:
    dense_blocks = m.moe.dense_layers if m.moe is not None else m.layers
    moe_blocks = m.layers - dense_blocks
    blocks = dense_blocks * block_params(m, moe_block=False) + moe_blocks * block_params(
        m, moe_block=True, active=active
    )
    embeddings = (1 if m.tied_embeddings else 2) * m.vocab * m.hidden
    return blocks + m.hidden + embeddings


def total_params_of(m: ModelShape) -> int:
    """Every parameter of the model ``m`` (module docstring)."""
    return _count(m, active=False)


def active_params(m: ModelShape) -> int:
    """Parameters one token passes through (module docstring): the total for a dense model."""
    return _count(m, active=True)


def active_matmul_params(m: ModelShape) -> int:
    """Weights one token multiplies: every block's attention projections and MLP (its
    ``experts_per_token`` routed experts and the shared ones in an MoE block) plus the LM head.
    Norms, the router (``hidden x num_experts``, negligible) and the input embedding (a lookup)
    are left out, as Megatron-LM's ``num_floating_point_operations`` leaves them out."""
    dense_blocks = m.moe.dense_layers if m.moe is not None else m.layers
    moe_blocks = m.layers - dense_blocks
    dense_mlp = int(mlp_params_per_layer(m.hidden, m.ffn, m.mlp == "swiglu"))
    moe_mlp = 0
    if m.moe is not None:
        moe_mlp = moe_mlp_active_params(m.hidden, m.moe) - m.hidden * m.moe.num_experts
    return (
        m.layers * attention_params(m)
        + dense_blocks * dense_mlp
        + moe_blocks * moe_mlp
        + m.vocab * m.hidden
    )


def model_flops_per_token(m: ModelShape, seq_len: int, *, causal: bool = False) -> float:
    """Model FLOPs per trained token, forward and backward: ``6·N_act`` over the active matmul
    weights (:func:`active_matmul_params`) plus the attention scores, ``6·layers·seq_len·heads·
    (d_qk + d_v)`` (``QKᵀ`` and ``AV``; ``d_qk = d_v = head_dim`` for grouped-query attention,
    ``qk_nope + qk_rope`` and ``v_head_dim`` for MLA). ``causal`` halves the attention term, as
    Megatron-LM has since 2025-03-06 (commit 8873b55d), NeMo 2, Megatron-Bridge and torchtitan
    do; without it this is trainscale's convention (:mod:`trainscale.sim.model.flops`, PaLM's),
    which for a dense model it equals."""
    # d_qk + d_v per head
    width = 2 * m.head_dim if m.mla is None else m.mla.qk_head_dim + m.mla.v_head_dim
    attention = (3.0 if causal else 6.0) * m.layers * seq_len * m.heads * width
    return 6.0 * active_matmul_params(m) + attention
