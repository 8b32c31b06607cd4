"""Power per GPU from the time spent in each phase of a step.

``P = P_idle + (TDP − P_idle) · (k_dense·t_dense + k_mem·t_mem + k_comm·t_comm) / t_step``

- ``t_dense``: GEMM and attention kernels (tensor cores busy); ``k_dense`` = ``power_compute_frac``;
- ``t_mem``: memory-bound kernels and the optimizer (HBM busy, tensor cores mostly idle);
- ``t_comm``: exposed communication, when only NCCL kernels run;
- the rest of the step (pipeline bubble, waiting for the host) draws idle power with a context
  held (``idle_w``).

Communication hidden under compute adds nothing: the GPU is already counted as computing.
Returns watts, clipped to [idle, TDP].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from trainscale.sim.calibration import Calibration

__all__ = ["power_per_gpu"]


def power_per_gpu(
    *,
    dense_s: ArrayLike,
    memory_bound_s: ArrayLike,
    exposed_comm_s: ArrayLike,
    step_time_s: ArrayLike,
    tdp_w: ArrayLike,
    idle_w: ArrayLike,
    cal: Calibration,
) -> np.ndarray:
    """Average power per GPU over a step, watts."""
    active = (
        cal.power_compute_frac * dense_s
        + cal.power_memory_frac * memory_bound_s
        + cal.power_comm_frac * exposed_comm_s
    ) / step_time_s
    return np.clip(idle_w + (tdp_w - idle_w) * active, idle_w, tdp_w)
