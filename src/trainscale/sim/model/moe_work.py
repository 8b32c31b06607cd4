"""One GPU's work per micro-batch for models the dense block does not describe: a
mixture-of-experts MLP, multi-head latent attention, or heads not ``hidden / heads`` wide.

The step-time model treats a pipeline stage as ``Ls`` identical blocks; a model with
``dense_layers`` leading dense blocks and ``moe_layers`` MoE blocks is described by their
average block: the dense MLP weighted by ``dense_share = 1 - moe_share`` and the MoE MLP by
``moe_share = moe_layers / layers`` (the slowest stage is taken to hold each kind in the model's
proportion).

Per block, on one GPU (``T`` = micro_batch·seq_len/cp tokens, tensor-parallel degree ``tp``):

- **attention projections** as GEMMs ``(M, N, K)``: grouped-query attention with ``head_dim``
  ``d``: QKV ``(T, H·d/tp + 2·kv_local, h)``, O ``(T, h, H·d/tp)``; multi-head latent attention
  (DeepSeek-V2, arXiv 2405.04434 Sec 2.1) as Megatron-Core builds it, the down-projections
  ``q_a`` ``(T, q_lora, h)`` and ``kv_a`` ``(T, kv_lora + rope, h)`` replicated on every
  tensor-parallel rank (Megatron-Core ``MLASelfAttention``: ``linear_q_down_proj`` and
  ``linear_kv_down_proj`` are not split), the up-projections ``q_b`` ``(T, H·d_qk/tp, q_lora)``
  and ``kv_b`` ``(T, H·(nope + d_v)/tp, kv_lora)`` and O ``(T, h, H·d_v/tp)`` split;
- **attention core**: causal FlashAttention, ``2·T·s/2·(H/tp)·(d_qk + d_v)`` FLOPs forward;
- **the MoE MLP**: the router ``(T/tp, E, h)`` (each sequence-parallel rank routes its
  ``T/tp`` tokens), the shared experts as a dense SwiGLU MLP of ``shared_ffn`` split by ``tp``,
  and the routed experts as grouped GEMMs. The ``dp·cp`` replicas of a stage hold
  ``dp·micro_batch·seq_len`` tokens, each sent to ``k`` experts; every expert is replicated
  ``edp`` times and split ``etp`` ways, so one GPU runs ``E/ep`` experts of
  ``r = T·cp·dp·k / (E·edp)`` rows each (on average), GEMMs ``(r, 2·f/etp, h)`` and
  ``(r, h, f/etp)``: ``T·k·etp/tp`` rows per GPU in all;
- **memory-bound kernels**: the dense block's per-token traffic
  (:data:`trainscale.sim.model.work._BLOCK_ELEMENTS`) with the MLP's share for the dense and
  shared MLPs, plus per routed row the permutation and un-permutation (read and write ``h``
  twice: ``4h``) and SwiGLU on ``f/etp``; the router's fp32 softmax and top-k over ``E``
  logits (8 bytes each).

Arrays hold only the rows ``rows`` (indices into the configurations) that need this model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trainscale.sim.model.work import _BLOCK_ELEMENTS, _FUSED_BLOCK_ELEMENTS, BlockWork

__all__ = ["MoEWork", "described", "moe_work", "with_moe_work"]


def described(
    num_experts: np.ndarray, kv_lora_rank: np.ndarray, head_dim: np.ndarray,
    hidden: np.ndarray, heads: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Per configuration: whether this module describes its model (a mixture of experts, MLA, or
    heads not ``hidden / heads`` wide) rather than the dense block of
    :mod:`trainscale.sim.model.work`."""
    return (num_experts > 0) | (kv_lora_rank > 0) | (head_dim * heads != hidden)


@dataclass(frozen=True, slots=True, kw_only=True)
class MoEWork:
    """One GPU's work of the average block per micro-batch, for the configurations ``rows``
    (every other array has ``len(rows)`` elements). GEMMs are ``(M, N, K, blocks)``: the
    GEMM's shape and how many of them one average block runs (a share for the dense or MoE
    part)."""

    rows: np.ndarray
    """Indices of the configurations described."""
    gemms: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
    """Forward GEMMs other than the routed experts: attention projections, dense MLP, shared
    experts, router."""
    attention_flops_fwd: np.ndarray
    """Causal FlashAttention FLOPs of one block's forward."""
    expert_rows: np.ndarray
    """Mean rows per local expert per MoE block, ``r`` (before routing imbalance)."""
    local_experts: np.ndarray
    """Experts on one GPU, ``E / ep``."""
    expert_in: tuple[np.ndarray, np.ndarray]
    """``(N, K)`` of an expert's gate/up GEMM: ``(2·f/etp, h)``."""
    expert_out: tuple[np.ndarray, np.ndarray]
    """``(N, K)`` of its down GEMM: ``(h, f/etp)``."""
    moe_share: np.ndarray
    """MoE blocks / blocks."""
    elementwise_bytes: np.ndarray
    """HBM bytes of the average block's memory-bound kernels, forward plus backward, without
    the routed rows' part."""
    row_bytes: np.ndarray
    """HBM bytes per routed row and MoE block, forward plus backward (permutation, SwiGLU)."""
    routed_tokens: np.ndarray
    """Tokens one GPU routes per MoE block, ``T/tp``."""
    dense_param_bytes: np.ndarray
    """bf16 bytes on one GPU of the average block's weights outside the routed experts."""
    expert_param_bytes: np.ndarray
    """bf16 bytes on one GPU of the average block's routed experts, ``E·3·h·f / (ep·etp)``
    times ``moe_share``."""


def _attention_gemms(
    t: np.ndarray, h: np.ndarray, tp: np.ndarray, heads: np.ndarray, kv_heads: np.ndarray,
    head_dim: np.ndarray, mla: tuple[np.ndarray, ...],
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]:  # fmt: skip
    """Five attention-projection slots ``(M, N, K, count)``: GQA uses two, MLA all five (the
    query down-projection only with a query latent). Unused slots have count 0 and unit dims."""
    q_lora, kv_lora, qk, rope, v = mla
    is_mla = kv_lora > 0
    one = np.ones_like(t)
    kv_local = np.maximum(kv_heads // tp, 1) * head_dim
    local_heads = heads / tp
    nope = qk - rope
    qkv = np.where(is_mla, 0.0, local_heads * head_dim + 2.0 * kv_local)
    q_in = np.where(q_lora > 0, q_lora, h)
    return (
        (t, np.where(is_mla, local_heads * qk, qkv), np.where(is_mla, q_in, h), one),
        (t, h, np.where(is_mla, local_heads * v, local_heads * head_dim), one),
        (t, np.maximum(q_lora, 1.0), h, np.where(is_mla & (q_lora > 0), 1.0, 0.0)),
        (t, np.maximum(kv_lora + rope, 1.0), h, np.where(is_mla, 1.0, 0.0)),
        (t, np.maximum(local_heads * (nope + v), 1.0), np.maximum(kv_lora, 1.0),
         np.where(is_mla, 1.0, 0.0)),
    )  # fmt: skip


def _attention_params(
    h: np.ndarray, tp: np.ndarray, heads: np.ndarray, kv_heads: np.ndarray,
    head_dim: np.ndarray, mla: tuple[np.ndarray, ...],
) -> np.ndarray:  # fmt: skip
    """Attention weights on one GPU: the split projections over ``tp``, MLA's down-projections
    and latent norms whole (the per-block counts of :mod:`trainscale.sim.model.attention`)."""
    q_lora, kv_lora, qk, rope, v = mla
    gqa = (2.0 * heads * head_dim + 2.0 * kv_heads * head_dim) * h / tp
    query_split = np.where(q_lora > 0, q_lora * heads * qk, h * heads * qk)
    split = query_split + kv_lora * heads * (qk - rope + v) + heads * v * h
    whole = h * q_lora + h * (kv_lora + rope) + q_lora + kv_lora
    return np.where(kv_lora > 0, split / tp + whole, gqa)


def moe_work(
    rows: np.ndarray,
    *,
    shape: dict[str, np.ndarray],
    plan: dict[str, np.ndarray],
    fused_kernels: np.ndarray,
) -> MoEWork:
    """The average block's work on one GPU for the configurations ``rows`` (module docstring).

    ``shape``: the model arrays ``layers, hidden, heads, kv_heads, ffn, head_dim, q_lora_rank,
    kv_lora_rank, qk_head_dim, qk_rope_dim, v_head_dim, num_experts, experts_per_token,
    expert_ffn, shared_ffn, moe_layers``; ``plan``: ``micro_batch, seq_len, tp, cp, dp, ep, etp,
    edp, sequence_parallel``; ``fused_kernels`` the stack's flag; all of every configuration,
    indexed here by ``rows``."""
    s = {k: np.asarray(a)[rows].astype(np.float64) for k, a in shape.items()}
    p = {k: np.asarray(a)[rows].astype(np.float64) for k, a in plan.items()}
    fused = np.asarray(fused_kernels)[rows]
    h, tp, heads = s["hidden"], p["tp"], s["heads"]
    t = p["micro_batch"] * p["seq_len"] / p["cp"]
    mla = tuple(s[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_dim",
                               "v_head_dim"))  # fmt: skip
    is_mla = s["kv_lora_rank"] > 0
    experts = np.maximum(s["num_experts"], 1.0)
    moe_share = s["moe_layers"] / s["layers"]
    dense_share = 1.0 - moe_share
    k = s["experts_per_token"]
    f_local = np.maximum(s["expert_ffn"], 1.0) / p["etp"]
    ffn, shared = np.maximum(s["ffn"], 1.0), np.maximum(s["shared_ffn"], 1.0)
    routed = t / tp
    gemms = (
        *_attention_gemms(t, h, tp, heads, s["kv_heads"], s["head_dim"], mla),
        (t, 2.0 * ffn / tp, h, np.where(s["ffn"] > 0, dense_share, 0.0)),
        (t, h, ffn / tp, np.where(s["ffn"] > 0, dense_share, 0.0)),
        (t, 2.0 * shared / tp, h, np.where(s["shared_ffn"] > 0, moe_share, 0.0)),
        (t, h, shared / tp, np.where(s["shared_ffn"] > 0, moe_share, 0.0)),
        (routed, experts, h, np.where(s["num_experts"] > 0, moe_share, 0.0)),
    )
    d_qk = np.where(is_mla, s["qk_head_dim"], s["head_dim"])
    d_v = np.where(is_mla, s["v_head_dim"], s["head_dim"])
    attention_flops = 2.0 * t * p["seq_len"] * 0.5 * heads / tp * (d_qk + d_v)
    per_hidden, per_rotary, per_ffn = (
        np.where(fused, fused_llama, llama)
        for llama, fused_llama in zip(_BLOCK_ELEMENTS["swiglu"], _FUSED_BLOCK_ELEMENTS["swiglu"],
                                      strict=True)
    )  # fmt: skip
    norm_share = np.where((p["sequence_parallel"] > 0) & (tp > 1), 1.0 / tp, 1.0)
    rotary = np.where(is_mla, heads / tp * s["qk_rope_dim"] + s["qk_rope_dim"],
                      heads / tp * s["head_dim"] + np.maximum(s["kv_heads"] // tp, 1)
                      * s["head_dim"])  # fmt: skip
    mlp_width = dense_share * np.where(s["ffn"] > 0, ffn, 0.0) + moe_share * np.where(
        s["shared_ffn"] > 0, shared, 0.0
    )
    forward = per_hidden * h * norm_share + per_rotary * rotary + per_ffn * mlp_width / tp
    router_bytes = 8.0 * routed * experts * moe_share
    elementwise = 3.0 * (2.0 * t * forward + router_bytes)
    row_bytes = 3.0 * 2.0 * (4.0 * h + per_ffn * f_local)
    mlp_params = 3.0 * h * (mlp_width / tp) + moe_share * h * experts * (s["num_experts"] > 0)
    dense_params = _attention_params(h, tp, heads, s["kv_heads"], s["head_dim"], mla) + 2.0 * h
    expert_params = moe_share * s["num_experts"] * 3.0 * h * s["expert_ffn"] / (p["ep"] * p["etp"])
    return MoEWork(
        rows=rows,
        gemms=gemms,
        attention_flops_fwd=attention_flops,
        expert_rows=t * p["cp"] * p["dp"] * k / (experts * p["edp"]),
        local_experts=s["num_experts"] / p["ep"],
        expert_in=(2.0 * f_local, h),
        expert_out=(h, f_local),
        moe_share=np.where(s["num_experts"] > 0, moe_share, 0.0),
        elementwise_bytes=elementwise,
        row_bytes=row_bytes,
        routed_tokens=routed,
        dense_param_bytes=2.0 * (dense_params + mlp_params),
        expert_param_bytes=2.0 * expert_params,
    )


def with_moe_work(work: BlockWork, mw: MoEWork) -> BlockWork:
    """``work`` carrying ``mw``, its rows' weights outside the routed experts as
    ``layer_param_bytes`` (what the dense data-parallel collectives, the optimizer step and
    the model states read; the experts' are ``mw.expert_param_bytes``)."""
    layer_bytes = work.layer_param_bytes.copy()
    layer_bytes[mw.rows] = mw.dense_param_bytes
    # The dense block's GEMMs of these rows are never timed (the average block's replace
    # them), but are kept finite: a model without dense blocks has ffn 0.
    gemms = tuple((m, np.maximum(n, 1.0), np.maximum(k, 1.0)) for m, n, k in work.gemms)
    return replace(work, moe=mw, layer_param_bytes=layer_bytes, gemms=gemms)
