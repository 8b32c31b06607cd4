"""Time of the compute kernels on one GPU, vectorised over configurations.

- **GEMM** ``(M, N, K)``: a roofline, ``max(2MNK / (η(d)·peak), bytes / (η_hbm·B_hbm))``, with the
  size-dependent efficiency ``η(d) = η_max / (1 + (d0/d)^a)`` where ``d = min(M, N, K)``;
  ``η_max``
  is the GPU's MAMF fraction (catalogue) and ``d0`` its half-efficiency size (catalogue ×
  ``gemm_size_scale``). Tile and wave quantisation make small GEMMs slow.
- **FlashAttention**: executed FLOPs at ``attention_efficiency × peak``.
- **memory-bound kernels**: bytes over ``hbm_efficiency × HBM bandwidth``.

Every function returns seconds; arguments are scalars or arrays of shape ``(n,)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["attention_time", "gemm_efficiency", "gemm_time", "memory_time"]


def gemm_efficiency(
    m: ArrayLike,
    n: ArrayLike,
    k: ArrayLike,
    eta_max: ArrayLike,
    d0: ArrayLike,
    exponent: float = 1.0,
) -> np.ndarray:
    """Fraction of peak a GEMM reaches: ``eta_max / (1 + (d0 / d)^a)``, ``d = min(m, n, k)``.

    (An effective size from the arithmetic intensity, ``3 / (1/m + 1/n + 1/k)``, was tried and
    fitted the published throughput worse: 10.4 % against 10.1 % MAPE.)
    """
    d = np.minimum(np.minimum(m, n), k).astype(np.float64)
    ratio = (np.asarray(d0, dtype=np.float64) / d) ** exponent
    return eta_max / (1.0 + ratio)


def gemm_time(
    m: ArrayLike,
    n: ArrayLike,
    k: ArrayLike,
    *,
    peak: ArrayLike,
    eta_max: ArrayLike,
    d0: ArrayLike,
    hbm_bw: ArrayLike,
    bytes_per_element: float = 2.0,
    exponent: float = 1.0,
) -> np.ndarray:
    """Seconds for one ``(m×k)·(k×n)`` GEMM: the slower of its compute and its HBM traffic."""
    m = np.asarray(m, dtype=np.float64)
    flops = 2.0 * m * n * k
    compute = flops / (gemm_efficiency(m, n, k, eta_max, d0, exponent) * peak)
    traffic = bytes_per_element * (m * k + k * n + m * n) / hbm_bw
    return np.maximum(compute, traffic)


def attention_time(
    flops: ArrayLike, *, peak: ArrayLike, attention_efficiency: ArrayLike
) -> np.ndarray:
    """Seconds for FlashAttention kernels executing ``flops``."""
    return flops / (attention_efficiency * peak)


def memory_time(
    num_bytes: ArrayLike, *, hbm_bw: ArrayLike, hbm_efficiency: ArrayLike
) -> np.ndarray:
    """Seconds for memory-bound kernels moving ``num_bytes`` through HBM."""
    return num_bytes / (hbm_efficiency * hbm_bw)
