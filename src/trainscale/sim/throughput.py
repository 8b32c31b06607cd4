"""The step time and throughput of validated configurations: the first thing
:func:`trainscale.sim.simulate.predict_arrays` computes, and all that a calibration fit's
residuals read (one prediction per parameter and Jacobian, thousands per fit), without the
memory, power, interval and flag columns of the full prediction (a third of its time).

Arrays are of shape ``(n,)``, one element per configuration; times in seconds, throughput in
tokens per second.
"""

from __future__ import annotations

import numpy as np

from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import Configs
from trainscale.sim.levels import level_parts, split_by_level
from trainscale.sim.model.work import BlockWork
from trainscale.sim.network import calibrated_network
from trainscale.sim.plan.layout import Layout, layout
from trainscale.sim.plan.schedule import StepTimes, step_times
from trainscale.sim.workload import workload

__all__ = ["step_throughput", "throughput_per_gpu"]


def step_throughput(
    c: Configs, cal: Calibration, catalogue: Catalogue
) -> tuple[BlockWork, Layout, StepTimes, np.ndarray]:
    """``(workload, layout, step times, tokens per second)`` of every configuration under
    ``cal`` (one calibration for all; its framework offsets in the catalogue's order)."""
    work = workload(c)
    place = layout(c.plan.tp, c.plan.cp, c.plan.dp, c.plan.sharding, c.system.gpus_per_node)
    t = step_times(c, work, place, calibrated_network(c.system, cal, catalogue.nccl), cal)
    tokens_per_step = (c.plan.global_batch * c.plan.seq_len).astype(np.float64)
    return work, place, t, tokens_per_step / t.step_time_s


def throughput_per_gpu(c: Configs, cal: Calibration, catalogue: Catalogue) -> np.ndarray:
    """``predict_arrays(c, cal, catalogue)["tokens_per_s_per_gpu"]``, the same numbers, from the
    step time alone; a calibration that records the levels its measurements ran predicts the
    other (framework, GPU) pairs at the shipped level, as
    :func:`~trainscale.sim.simulate.predict_arrays` does."""
    cal = cal.for_frameworks(catalogue.framework_keys)
    split = split_by_level(c, cal, catalogue.gpu_keys, catalogue.framework_keys)
    if split is None:
        return step_throughput(c, cal, catalogue)[3] / c.plan.num_gpus
    unmeasured, shipped_level = split
    out = np.empty(len(c))
    for index, calibration in level_parts(unmeasured, cal, shipped_level):
        part = c.take(index)
        out[index] = step_throughput(part, calibration, catalogue)[3] / part.plan.num_gpus
    return out
