"""Parameter counts of a transformer, derived from its shape, never stored.

Conventions (per transformer block):

- attention: Q and O are ``hidden x hidden``; K and V are ``hidden x (kv_heads * head_dim)``;
- MLP: ``swiglu`` has three ``hidden x ffn`` matrices (gate, up, down), ``gelu`` two;
- two norms of ``hidden`` weights each; biases are ignored (Llama has none, MPT has none);
- embeddings: ``vocab x hidden`` once when tied to the LM head, twice when not.

All functions take scalars or numpy arrays (one element per configuration, shape ``(n,)``) and
broadcast; counts are parameters (not bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "TransformerShape",
    "attention_params_per_layer",
    "block_params_b",
    "embedding_params",
    "layer_params",
    "matmul_params",
    "matrix_params_per_layer",
    "mlp_params_per_layer",
    "total_params",
]


@dataclass(frozen=True, slots=True)
class TransformerShape:
    """The shape the parameter and FLOP counts take: scalars, or numpy arrays of shape ``(n,)``
    (one element per configuration) that broadcast. A catalogue model's is
    :attr:`trainscale.sim.model.shape.ModelShape.transformer`."""

    layers: ArrayLike
    hidden: ArrayLike
    heads: ArrayLike
    kv_heads: ArrayLike
    """Key/value heads; equal to ``heads`` for multi-head attention."""
    ffn: ArrayLike
    """MLP inner size."""
    vocab: ArrayLike
    swiglu: ArrayLike
    """True for a SwiGLU MLP (three matrices), False for GELU (two)."""


def attention_params_per_layer(
    hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike
) -> np.ndarray:
    """Weights of Q, K, V and O projections of one block."""
    kv_dim = kv_heads * (hidden // heads)
    return 2 * hidden * hidden + 2 * hidden * kv_dim


def mlp_params_per_layer(hidden: ArrayLike, ffn: ArrayLike, swiglu: ArrayLike) -> np.ndarray:
    """Weights of one block's MLP: 3·h·ffn for SwiGLU, 2·h·ffn for GELU."""
    return np.where(swiglu, 3, 2) * hidden * ffn


def matrix_params_per_layer(shape: TransformerShape) -> np.ndarray:
    """Weights of one block's matrices (attention and MLP; no norms)."""
    return attention_params_per_layer(shape.hidden, shape.heads, shape.kv_heads) + (
        mlp_params_per_layer(shape.hidden, shape.ffn, shape.swiglu)
    )


def layer_params(
    hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike, ffn: ArrayLike, swiglu: ArrayLike
) -> np.ndarray:
    """Parameters of one transformer block (matrices plus two norms)."""
    return (
        attention_params_per_layer(hidden, heads, kv_heads)
        + mlp_params_per_layer(hidden, ffn, swiglu)
        + 2 * hidden
    )


def embedding_params(hidden: ArrayLike, vocab: ArrayLike, tied: ArrayLike) -> np.ndarray:
    """Input embedding plus LM head: vocab·h if tied, 2·vocab·h if not."""
    return np.where(tied, 1, 2) * vocab * hidden


def matmul_params(shape: TransformerShape) -> np.ndarray:
    """Parameters that take part in a matrix multiply per token: all block matrices plus the LM
    head (vocab·h); the input embedding is a lookup and costs no FLOPs."""
    return shape.layers * matrix_params_per_layer(shape) + shape.vocab * shape.hidden


def total_params(shape: TransformerShape, tied: ArrayLike) -> np.ndarray:
    """All parameters (blocks, final norm, embeddings); ``tied``: the LM head shares the input
    embedding."""
    return (
        shape.layers
        * layer_params(shape.hidden, shape.heads, shape.kv_heads, shape.ffn, shape.swiglu)
        + shape.hidden
        + embedding_params(shape.hidden, shape.vocab, tied)
    )


def block_params_b(
    layers: np.ndarray, hidden: np.ndarray, heads: np.ndarray, kv_heads: np.ndarray,
    ffn: np.ndarray, swiglu: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Transformer-block parameters in 10^9 (``layers * layer_params``), shape ``(n,)``."""
    return (
        np.asarray(layers, np.float64)
        * layer_params(
            np.asarray(hidden, np.float64),
            np.asarray(heads, np.float64),
            np.asarray(kv_heads, np.float64),
            np.asarray(ffn, np.float64),
            np.asarray(swiglu),
        )
        / 1e9
    )
