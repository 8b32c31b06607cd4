"""The calibrated efficiencies of each configuration's framework (GEMM, attention, memory
traffic, overlap slowdown, power-limited clock), arrays of shape ``(n,)``, dimensionless."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainscale.sim.system.power import tensor_clock_ratio

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.configs.arrays import SystemArrays

__all__ = ["Efficiencies", "efficiencies"]

#: Best fraction of peak any GEMM can reach, whatever a framework offset says.
_GEMM_EFFICIENCY_CAP = 0.99


@dataclass(frozen=True, slots=True)
class Efficiencies:
    """The calibrated efficiencies of each configuration's framework, shape ``(n,)``."""

    gemm_max: np.ndarray
    """Large-GEMM fraction of the configured precision's peak."""
    bf16_gemm_max: np.ndarray
    """Large-GEMM fraction of the BF16 peak (attention's batched GEMMs on GPUs without
    FlashAttention)."""
    attention: np.ndarray
    elementwise_traffic: np.ndarray
    overlap_slowdown: np.ndarray
    clock_ratio: np.ndarray
    """SM clock during dense compute over the unlimited clock: below 1 where a power limit
    throttles it (:func:`trainscale.sim.system.power.tensor_clock_ratio`)."""


def efficiencies(
    framework: np.ndarray, fp8: np.ndarray, system: SystemArrays, cal: Calibration
) -> Efficiencies:
    """Shared calibrated efficiencies times each row's framework factor ``exp(offset)``.

    ``framework``: each row's framework profile index (``StackArrays.framework``); ``fp8``: bool,
    FP8 GEMMs; ``system``: the GPU's efficiency ceilings (``gemm_efficiency_max``,
    ``bf16_gemm_efficiency_max``, ``attention_efficiency_max``: fractions of peak) and power
    (``power_limit_w``, ``tdp_w``, ``idle_w``: W). Every result is a dimensionless fraction or
    ratio, shape ``(n,)``.
    """

    def factor(base: str) -> np.ndarray:
        return cal.framework_factors(base)[framework]

    gemm = factor("gemm_efficiency")
    bf16 = np.minimum(system.bf16_gemm_efficiency_max * gemm, _GEMM_EFFICIENCY_CAP)
    fp8_max = system.gemm_efficiency_max * gemm * cal.fp8_gemm_scale * factor("fp8_gemm")
    return Efficiencies(
        gemm_max=np.where(fp8, np.minimum(fp8_max, _GEMM_EFFICIENCY_CAP), bf16),
        bf16_gemm_max=bf16,
        attention=cal.attention_efficiency_scale * factor("attention_efficiency")
        * system.attention_efficiency_max,
        elementwise_traffic=cal.elementwise_traffic_scale * factor("elementwise_traffic"),
        overlap_slowdown=cal.overlap_slowdown * factor("overlap_slowdown"),
        clock_ratio=tensor_clock_ratio(
            power_limit_w=system.power_limit_w, tdp_w=system.tdp_w, idle_w=system.idle_w, cal=cal,
        ),
    )  # fmt: skip
