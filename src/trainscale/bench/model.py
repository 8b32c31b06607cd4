"""A Llama-style decoder of a configured shape (the harness's model).

Pre-norm transformer blocks as in Llama 2/3 and torchtitan's ``llama3`` model: RMSNorm, rotary
position embeddings, grouped-query attention through
:func:`torch.nn.functional.scaled_dot_product_attention` (``is_causal=True``), a SwiGLU MLP
(``w2(silu(w1 x) * w3 x)``), a final RMSNorm and an untied LM head. No biases.

The parameter count equals :func:`trainscale.sim.model.params.total_params` for the same shape with
``tied_embeddings=False`` (checked in ``tests/bench/test_model.py``), so the simulator's model
FLOPs per token apply to it unchanged.

Attention infers the number of local heads from the projection outputs, so the same module runs
unchanged when tensor parallelism (:mod:`trainscale.bench.parallel`) shards ``wq``/``wk``/``wv``
column-wise: each rank then holds ``heads / tp`` query heads and ``kv_heads / tp`` KV heads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from trainscale.sim.model.params import TransformerShape

__all__ = ["Attention", "FeedForward", "LlamaDecoder", "ModelShapeArgs", "TransformerBlock"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelShapeArgs:
    """The decoder's shape and the two constants of its layers."""

    shape: TransformerShape
    """Blocks, width, heads, KV heads, SwiGLU inner size and vocabulary (integers). ``hidden``
    divides by ``heads`` into an even head width (rotary pairs); ``kv_heads`` divides
    ``heads``."""
    seq_len: int
    """Longest sequence the rotary table covers, tokens."""
    rope_theta: float = 10000.0
    """Rotary base (Llama 2: 10,000)."""
    norm_eps: float = 1e-5
    """RMSNorm epsilon (Llama 2: 1e-5)."""

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return int(self.shape.hidden // self.shape.heads)


def rotary_table(head_dim: int, seq_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine tables of shape ``(seq_len, head_dim / 2)`` (float32)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate interleaved pairs of the last dimension of ``x`` (batch, seq, heads, head_dim)."""
    x_pairs = x.float().unflatten(-1, (-1, 2))
    real, imag = x_pairs[..., 0], x_pairs[..., 1]
    cos = cos[None, : x.shape[1], None, :]
    sin = sin[None, : x.shape[1], None, :]
    rotated = torch.stack((real * cos - imag * sin, real * sin + imag * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


class Attention(nn.Module):
    """Grouped-query causal self-attention with rotary embeddings."""

    def __init__(self, args: ModelShapeArgs) -> None:
        super().__init__()
        self.head_dim = args.head_dim
        hidden = int(args.shape.hidden)
        kv_dim = int(args.shape.kv_heads) * args.head_dim
        self.wq = nn.Linear(hidden, hidden, bias=False)
        self.wk = nn.Linear(hidden, kv_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_dim, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """``x``: (batch, seq, hidden) → (batch, seq, hidden)."""
        batch, seq, _ = x.shape
        # -1: the local head count, which tensor parallelism divides by tp.
        q = self.wq(x).view(batch, seq, -1, self.head_dim)
        k = self.wk(x).view(batch, seq, -1, self.head_dim)
        v = self.wv(x).view(batch, seq, -1, self.head_dim)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (batch, heads, seq, head_dim)
        out = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=q.shape[1] != k.shape[1]
        )
        return self.wo(out.transpose(1, 2).reshape(batch, seq, -1))


class FeedForward(nn.Module):
    """SwiGLU MLP: ``w2(silu(w1 x) * w3 x)``."""

    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: (..., hidden) → (..., hidden)."""
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    """Pre-norm block: ``x + attn(norm(x))``, then ``h + mlp(norm(h))``."""

    def __init__(self, args: ModelShapeArgs) -> None:
        super().__init__()
        hidden = int(args.shape.hidden)
        self.attention_norm = nn.RMSNorm(hidden, eps=args.norm_eps)
        self.attention = Attention(args)
        self.ffn_norm = nn.RMSNorm(hidden, eps=args.norm_eps)
        self.feed_forward = FeedForward(hidden, int(args.shape.ffn))

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """``x``: (batch, seq, hidden) → same shape."""
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class LlamaDecoder(nn.Module):
    """Token embedding, ``layers`` blocks, final RMSNorm and an untied LM head."""

    def __init__(self, args: ModelShapeArgs) -> None:
        super().__init__()
        shape = args.shape
        if shape.hidden % shape.heads or shape.heads % shape.kv_heads or args.head_dim % 2:
            raise ValueError(
                f"hidden {shape.hidden} must divide by heads {shape.heads}, heads by kv_heads "
                f"{shape.kv_heads}, and the head width hidden/heads must be even"
            )
        if not shape.swiglu:
            raise ValueError("the decoder's MLP is SwiGLU: the shape's swiglu must be true")
        self.args = args
        hidden, vocab = int(shape.hidden), int(shape.vocab)
        self.tok_embeddings = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(int(shape.layers)))
        self.norm = nn.RMSNorm(hidden, eps=args.norm_eps)
        self.output = nn.Linear(hidden, vocab, bias=False)
        cos, sin = rotary_table(args.head_dim, args.seq_len, args.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    @torch.no_grad()
    def init_weights(self, generator: torch.Generator | None = None) -> None:
        """Llama-style initialisation: normal(0, 0.02) for matrices, ones for norms.

        Use the same ``generator`` seed on every rank so that replicas start identical.
        """
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                module.weight.normal_(0.0, 0.02, generator=generator)
            elif isinstance(module, nn.RMSNorm):
                module.reset_parameters()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens``: (batch, seq) int64 → logits (batch, seq, vocab)."""
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.rope_cos, self.rope_sin)
        return self.output(self.norm(h))
