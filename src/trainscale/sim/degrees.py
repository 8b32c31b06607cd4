"""The parallel degrees, defined once for every layer.

- **model-parallel degree** ``tp·pp·cp``: the GPUs one model replica spans (tensor, pipeline and
  context parallelism together). The paper's "model-parallel degree" is ``tp·pp``; its runs have
  ``cp = 1``, where the two agree.
- **data-parallel degree** ``dp = num_gpus / (tp·pp·cp)``: the replicas (or shards) of the
  weights; a configuration whose GPU count is not a multiple of the model-parallel degree has
  none (:func:`data_parallel_degree` gives 0 there, and :mod:`trainscale.sim.configs` rejects it).
- **expert data-parallel degree** ``edp = num_gpus / (pp·ep·etp)``: the replicas (or shards) of
  each routed expert of a mixture-of-experts block (:mod:`trainscale.sim.configs.expert_layouts`).
- **local batch** ``global_batch / dp``: the sequences one replica processes per optimizer step.

Every function takes scalars or numpy arrays (element-wise) and returns the same kind.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

__all__ = [
    "data_parallel_degree",
    "expert_data_parallel_degree",
    "local_batch",
    "model_parallel_degree",
]

Count = TypeVar("Count", int, np.ndarray)


def model_parallel_degree(tp: Count, pp: Count, cp: Count | int = 1) -> Count:
    """GPUs one model replica spans: ``tp·pp·cp``."""
    return tp * pp * cp  # type: ignore[return-value]


def data_parallel_degree(num_gpus: Count, tp: Count, pp: Count, cp: Count | int = 1) -> Count:
    """``num_gpus / (tp·pp·cp)`` where that divides evenly, else 0 (degrees below 1 count as 1)."""
    degree = np.maximum(model_parallel_degree(tp, pp, cp), 1)
    dp = np.where(np.asarray(num_gpus) % degree == 0, np.asarray(num_gpus) // degree, 0)
    return int(dp) if np.ndim(dp) == 0 else dp  # type: ignore[return-value]


def local_batch(global_batch: Count, dp: Count) -> Count:
    """Sequences per replica per step, ``global_batch // dp`` (``dp`` below 1 counts as 1)."""
    return global_batch // np.maximum(dp, 1)  # type: ignore[return-value]


def expert_data_parallel_degree(
    num_gpus: np.ndarray, pp: np.ndarray, ep: np.ndarray, etp: np.ndarray
) -> np.ndarray:
    """``num_gpus / (pp·ep·etp)`` where that divides evenly, else 0: the replicas (or FSDP
    shards) of each expert. For a dense plan (``ep`` 1, ``etp`` = ``tp``) this is ``dp·cp``."""
    degree = np.maximum(pp * ep * etp, 1)
    return np.where(num_gpus % degree == 0, num_gpus // degree, 0)
