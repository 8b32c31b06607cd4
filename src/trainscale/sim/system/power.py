"""Power per GPU from the time spent in each phase of a step, and the clock a power limit allows.

``P = P_idle + (TDP − P_idle) · (k_dense·t_dense + k_mem·t_mem + k_comm·t_comm) / t_step``

- ``t_dense``: GEMM and attention kernels (tensor cores busy); ``k_dense`` = ``power_compute_frac``;
- ``t_mem``: memory-bound kernels and the optimizer (HBM busy, tensor cores mostly idle);
- ``t_comm``: exposed communication, when only NCCL kernels run;
- the rest of the step (pipeline bubble, waiting for the host) draws idle power with a context
  held (``idle_w``).

Communication hidden under compute adds nothing: the GPU is already counted as computing.

**Power limit.** A board power limit below the TDP (``nvidia-smi -pl``; torchtitan's H100
benchmarks ran at "the default 500 W power limit" and note that raising it "can potentially
provide further speedups") is enforced by lowering the SM clock whenever the draw would exceed it.
Only GEMM-bound phases draw more than the limits in use (the memory-bound and communication
phases stay below ``P_idle + k_mem·(TDP − P_idle)``), so the clock drops during dense compute: to
the frequency at which the dense draw equals the limit. Dynamic power scales as ``C·V²·f`` with the
voltage following the frequency along the DVFS curve, so ``P − P_idle ∝ f³`` and the clock ratio is
``r = ((limit − P_idle) / (k_dense·(TDP − P_idle)))^(1/3)`` (at most 1). Tensor-core peak scales
with the clock (dense kernels take ``1/r`` as long); HBM bandwidth does not (memory-bound kernels
keep their time). Returns watts, clipped to [idle, limit].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration


__all__ = ["dense_power_fraction", "power_per_gpu", "tensor_clock_ratio"]


def dense_power_fraction(
    *, power_limit_w: ArrayLike, tdp_w: ArrayLike, idle_w: ArrayLike, cal: Calibration
) -> np.ndarray:
    """Power above idle during dense compute, as a fraction of ``TDP − idle``, under the limit.

    ``power_compute_frac`` where the limit is the TDP; lower where the limit caps the dense draw.
    """
    limit_frac = (np.asarray(power_limit_w, np.float64) - idle_w) / (
        np.asarray(tdp_w, np.float64) - idle_w
    )
    return np.minimum(cal.power_compute_frac, limit_frac)


def tensor_clock_ratio(
    *, power_limit_w: ArrayLike, tdp_w: ArrayLike, idle_w: ArrayLike, cal: Calibration
) -> np.ndarray:
    """SM clock during dense compute over the unlimited clock (1 where the limit is not reached).

    ``(dense draw allowed / dense draw unlimited)^(1/3)``: dynamic power ∝ V²·f with V ∝ f.
    """
    allowed = dense_power_fraction(power_limit_w=power_limit_w, tdp_w=tdp_w, idle_w=idle_w, cal=cal)
    return np.cbrt(allowed / cal.power_compute_frac)


def power_per_gpu(
    *,
    dense_s: ArrayLike,
    memory_bound_s: ArrayLike,
    exposed_comm_s: ArrayLike,
    step_time_s: ArrayLike,
    tdp_w: ArrayLike,
    idle_w: ArrayLike,
    power_limit_w: ArrayLike,
    cal: Calibration,
) -> np.ndarray:
    """Average power per GPU over a step, watts (``dense_s`` at the limited clock)."""
    dense_frac = dense_power_fraction(
        power_limit_w=power_limit_w, tdp_w=tdp_w, idle_w=idle_w, cal=cal
    )
    active = (
        dense_frac * dense_s
        + cal.power_memory_frac * memory_bound_s
        + cal.power_comm_frac * exposed_comm_s
    ) / step_time_s
    return np.clip(idle_w + (tdp_w - idle_w) * active, idle_w, power_limit_w)
