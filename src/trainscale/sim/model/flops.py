"""FLOPs per token: the MFU and HFU conventions.

**Model FLOPs** (MFU, PaLM Appendix B): ``6·N_matmul + 12·layers·hidden·seq_len`` per token, where
``N_matmul`` counts every weight that takes part in a matrix multiply (all block matrices and the
LM head; the input embedding is a lookup). The attention term counts ``QKᵀ`` and ``AV`` in the
forward (``4·h·s`` per token per layer) times 3 for forward and backward, **ignoring the causal
mask**, as PaLM, Megatron-LM, llm-foundry and torchtitan do. For Llama-2-7B at s = 4096 this is
``6·6.74e9 + 12·32·4096·4096`` ≈ 4.69e10 FLOPs per token.

**Hardware FLOPs** (HFU) add what recomputation executes again: the whole forward of every block
for ``full`` recomputation, the attention core (``4·h·s`` per token per layer) for ``selective``.

All functions take a :class:`~trainscale.sim.model.params.TransformerShape` of scalars or
arrays and broadcast.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from trainscale.sim.model.params import TransformerShape, matmul_params, matrix_params_per_layer

__all__ = ["hardware_flops_per_token", "model_flops_per_token"]


def model_flops_per_token(shape: TransformerShape, seq_len: ArrayLike) -> np.ndarray:
    """Model FLOPs per trained token (forward and backward, no recomputation)."""
    n_matmul = matmul_params(shape)
    return 6.0 * n_matmul + 12.0 * shape.layers * shape.hidden * np.asarray(
        seq_len, dtype=np.float64
    )


def hardware_flops_per_token(
    shape: TransformerShape, seq_len: ArrayLike, recompute: ArrayLike
) -> np.ndarray:
    """Model FLOPs plus recomputed FLOPs; ``recompute`` is 0 none, 1 selective, 2 full."""
    recompute = np.asarray(recompute)
    layers, hidden = shape.layers, shape.hidden
    block_forward = 2.0 * layers * matrix_params_per_layer(shape) + 4.0 * layers * hidden * (
        np.asarray(seq_len, dtype=np.float64)
    )
    attention_core = 4.0 * layers * hidden * np.asarray(seq_len, dtype=np.float64)
    extra = np.where(recompute == 2, block_forward, np.where(recompute == 1, attention_core, 0.0))
    return model_flops_per_token(shape, seq_len) + extra
