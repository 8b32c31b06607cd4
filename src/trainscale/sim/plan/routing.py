"""Routing imbalance: how much more than the mean the busiest expert-parallel rank carries.

Every MoE block waits, at its combine, for the rank whose experts received the most tokens, so
that rank's load sets the pace of the grouped GEMMs and of the exchange. ``load`` is its rows
over the mean rows per rank, per ``moe_routing`` (:data:`~trainscale.schema.MOE_ROUTINGS`):

- ``balanced`` (routing forced uniform, as benchmarks do with Megatron-LM's
  ``--moe-router-force-load-balancing`` or torchtitan's ``moe_force_load_balance``): 1;
- ``capacity`` (Megatron-LM ``--moe-expert-capacity-factor`` with
  ``--moe-pad-expert-input-to-capacity``; GShard, arXiv 2006.16668): every expert takes exactly
  ``capacity_factor`` times its uniform share (tokens above it dropped, the rest padded): the
  factor itself, on every rank;
- ``dropless`` (a trained router, every token kept): the loads of the ``ep`` ranks are random.
  A rank holds ``E/ep`` experts whose loads vary with coefficient of variation ``cv`` (the
  calibration's ``expert_load_cv``; independent experts average to ``cv/sqrt(E/ep)``), and its
  ``n`` rows are a multinomial sample (coefficient of variation ``sqrt((1 − 1/ep)/n)``); with
  relative spread ``σ = sqrt(cv²·ep/E + (1 − 1/ep)/n)`` the busiest of ``ep`` ranks carries
  ``1 + σ·E[max of ep standard normals]`` (Blom's approximation, as for stragglers).

Arrays of shape ``(n,)``; dimensionless.
"""

from __future__ import annotations

import numpy as np

from trainscale.schema import MOE_ROUTINGS
from trainscale.sim.plan.order_statistics import expected_max_standard_normal

__all__ = ["routing_load"]

_BALANCED, _CAPACITY = MOE_ROUTINGS.index("balanced"), MOE_ROUTINGS.index("capacity")


def routing_load(
    routing: np.ndarray,
    capacity_factor: np.ndarray,
    *,
    experts: np.ndarray,
    ep: np.ndarray,
    rows_per_rank: np.ndarray,
    cv: float,
) -> np.ndarray:
    """The busiest expert-parallel rank's rows over the mean (module docstring); ``routing``
    codes of :data:`~trainscale.schema.MOE_ROUTINGS`, ``rows_per_rank`` the mean routed rows one
    rank's experts take per block."""
    ep = np.asarray(ep, dtype=np.float64)
    experts = np.maximum(np.asarray(experts, dtype=np.float64), 1.0)
    sampling = (1.0 - 1.0 / ep) / np.maximum(rows_per_rank, 1.0)
    spread = np.sqrt(cv**2 * ep / experts + sampling)
    dropless = 1.0 + spread * expected_max_standard_normal(ep)
    return np.select(
        [routing == _BALANCED, routing == _CAPACITY], [np.ones_like(ep), capacity_factor], dropless
    )
