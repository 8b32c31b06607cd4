"""Fine-tuning as a training mode: what LoRA removes from a step and what its adapters add.

``finetune`` ``none`` (pretraining) and ``full`` (every weight trained) do the same work. With
``lora`` (Hu et al. 2021, https://arxiv.org/abs/2106.09685) the base weights are frozen:

- **GEMMs**: each frozen linear still runs its forward GEMM and, in backward, its input-gradient
  GEMM (the gradient must flow to the layers below), but not its weight-gradient GEMM (PyTorch
  computes no gradient for a tensor with ``requires_grad=False``); the LM head likewise;
- **adapters**: on each targeted projection ``W`` (``in → out``) a rank-``r`` pair ``A``
  (``in → r``) and ``B`` (``r → out``), whose forward, input-gradient and weight-gradient GEMMs
  all run; targets: the attention projections (QKV and output) of every block, as the MLPerf
  Training ``llama2_70b_lora`` reference (https://github.com/mlcommons/training/tree/master/llama2_70b_lora)
  and NeMo's default LoRA targets (``linear_qkv``, ``linear_proj``) [E: the MLPerf logs do not
  print the targets];
- **optimizer and gradients**: only the adapters keep Adam state and gradients, so the
  data-parallel gradient reduction and the optimizer step move the adapters' bytes
  (:func:`trainable_share` of the weights), and memory holds the frozen weights in bf16 (2 bytes
  per parameter) instead of weights, gradients and Adam state.

Adapters are sharded with their projection under tensor parallelism (``A`` of a row-parallel
projection and ``B`` of a column-parallel one split, the other replicated; counted split here,
an [E] simplification worth well under 1 % of a rank-16 adapter's already small cost).
"""

from __future__ import annotations

import numpy as np

from trainscale.schema import FINETUNE_MODES
from trainscale.sim.model.work import BlockWork

__all__ = ["LORA", "adapter_gemms", "lora_mask", "trainable_share", "weight_gradient_share"]

#: Code of ``lora`` in :data:`~trainscale.schema.FINETUNE_MODES`.
LORA = FINETUNE_MODES.index("lora")


def lora_mask(finetune: np.ndarray) -> np.ndarray:
    """True for the configurations that train LoRA adapters on frozen weights; ``finetune``: the
    code of each row's mode in :data:`~trainscale.schema.FINETUNE_MODES`."""
    return np.asarray(finetune) == LORA


def weight_gradient_share(finetune: np.ndarray) -> np.ndarray:
    """Share of the base weights whose weight-gradient GEMMs run (dimensionless): 0 under LoRA,
    else 1."""
    return np.where(lora_mask(finetune), 0.0, 1.0)


def _targets(w: BlockWork) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``(in, out)`` widths on this GPU of the projections LoRA adapts: QKV and output."""
    (_, qkv_out, qkv_in), (_, o_out, o_in) = w.gemms[0], w.gemms[1]
    return ((qkv_in, qkv_out), (o_in, o_out))


def adapter_gemms(lora_rank: np.ndarray, w: BlockWork) -> tuple[tuple[np.ndarray, ...], ...]:
    """Forward GEMMs ``(M, N, K)`` of one block's adapters (``A``: tokens × r × in, ``B``:
    tokens × out × r; elements) at every configuration's ``lora_rank``; the caller counts them
    where :func:`lora_mask` holds. Each also runs its two backward GEMMs (input and weight
    gradient)."""
    rank = lora_rank.astype(np.float64)
    tokens = w.tokens
    out: list[tuple[np.ndarray, ...]] = []
    for width_in, width_out in _targets(w):
        out.append((tokens, rank, width_in))
        out.append((tokens, width_out, rank))
    return tuple(out)


def trainable_share(finetune: np.ndarray, lora_rank: np.ndarray, w: BlockWork) -> np.ndarray:
    """Trained share of a block's weight elements (dimensionless): the adapters' over the base
    block's under LoRA, 1 otherwise (what the gradient reduction and the optimizer step move)."""
    rank = lora_rank.astype(np.float64)
    adapters = sum(rank * (width_in + width_out) for width_in, width_out in _targets(w))
    base = w.layer_param_bytes / 2.0
    return np.where(lora_mask(finetune), adapters / base, 1.0)
