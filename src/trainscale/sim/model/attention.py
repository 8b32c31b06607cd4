"""Attention projections as the catalogue models use them: their parameters per block.

Two kinds (biases ignored, as in :mod:`trainscale.sim.model.params`):

- **Grouped-query attention** with a per-head width ``head_dim`` that need not be
  ``hidden / heads`` (Qwen3: hidden 4096, 64 heads of 128; GPT-OSS: hidden 2880, 64 heads of 64):
  Q is ``hidden x heads·head_dim``, K and V ``hidden x kv_heads·head_dim`` each, O
  ``heads·head_dim x hidden``. With ``head_dim = hidden / heads`` this is the dense count of
  :func:`trainscale.sim.model.params.attention_params_per_layer`.
- **Multi-head latent attention** (DeepSeek-V2, arXiv 2405.04434 Sec 2.1; DeepSeek-V3; Kimi K2),
  as in the Hugging Face ``modeling_deepseek.py``: ``q_a_proj`` ``hidden x q_lora_rank`` and
  ``q_b_proj`` ``q_lora_rank x heads·(qk_nope_head_dim + qk_rope_head_dim)`` (one
  ``hidden x heads·(nope + rope)`` ``q_proj`` when ``q_lora_rank`` is absent, as DeepSeek-V2-Lite),
  ``kv_a_proj_with_mqa`` ``hidden x (kv_lora_rank + qk_rope_head_dim)``, ``kv_b_proj``
  ``kv_lora_rank x heads·(qk_nope_head_dim + v_head_dim)``, ``o_proj``
  ``heads·v_head_dim x hidden``, and the RMSNorms of the two latents (``q_lora_rank`` and
  ``kv_lora_rank`` weights).

Counts are parameters (not bytes), per transformer block.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MLAShape", "gqa_params", "mla_norm_params", "mla_params"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MLAShape:
    """The latent dimensions of multi-head latent attention (Hugging Face ``config.json`` names)."""

    q_lora_rank: int | None
    """Rank of the query compression; None: queries are projected directly (no latent)."""
    kv_lora_rank: int
    """Rank of the joint key/value compression (the cached latent)."""
    qk_nope_head_dim: int
    """Per-head query/key width without rotary embedding."""
    qk_rope_head_dim: int
    """Per-head query/key width with rotary embedding (the rotary key is shared by all heads)."""
    v_head_dim: int
    """Per-head value width."""

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head: ``qk_nope_head_dim + qk_rope_head_dim``."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


def gqa_params(hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    """Weights of Q, K, V and O of one grouped-query attention block."""
    return 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim


def mla_params(hidden: int, heads: int, mla: MLAShape) -> int:
    """Weights of one multi-head latent attention block's projections (module docstring)."""
    if mla.q_lora_rank is None:
        query = hidden * heads * mla.qk_head_dim
    else:
        query = hidden * mla.q_lora_rank + mla.q_lora_rank * heads * mla.qk_head_dim
    key_value = hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank * heads * (
        mla.qk_nope_head_dim + mla.v_head_dim
    )
    return query + key_value + heads * mla.v_head_dim * hidden


def mla_norm_params(mla: MLAShape) -> int:
    """Weights of the RMSNorms on the query and key/value latents of one block."""
    return (mla.q_lora_rank or 0) + mla.kv_lora_rank
