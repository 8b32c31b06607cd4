"""Levels a user calibration measured, and the shipped level everywhere else.

A calibration refitted on a user's measured rows (:mod:`trainscale.calibrate.user`) records in its
pilot block which (framework, GPU) pairs those rows ran
(:attr:`trainscale.sim.pilot_intervals.PilotIntervals.measured_levels`) and the base
calibration's framework offsets (the shipped level). A configuration of another pair was not
measured: the refitted framework level is not evidence for it (the offset of a stack measured on
H100 is not that stack's on B200, and a stack none of the rows ran has nothing of them), so it
keeps the shipped level, takes the shipped conformal interval
(:meth:`trainscale.sim.intervals.PredictionIntervals.log_factors`) and carries
``unmeasured_level:FRAMEWORK/GPU`` in ``extrapolation``. A configuration of a measured pair
farther from the measured GPU counts than the pilots' reach (``D`` doublings against ``R``,
:mod:`trainscale.calibrate.pilot_reach`: the distance up to which a pilot-calibrated level beat
the shipped one on the published scaling series) is treated the same way and carries
``beyond_pilot_reach:D>R``. Cluster-wide terms the calibration refitted (the network) apply to
every configuration.

:func:`split_by_level` says which configurations are unmeasured and with which calibration they
are predicted; :func:`merge_by_level` predicts both parts and puts the rows back in order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from trainscale.sim.calibration import Calibration
from trainscale.sim.configs import Configs
from trainscale.sim.parameters import offset_name
from trainscale.sim.pilot_intervals import distance

__all__ = ["level_parts", "merge_by_level", "split_by_level"]


def split_by_level(
    c: Configs, cal: Calibration, gpu_keys: tuple[str, ...], framework_keys: tuple[str, ...]
) -> tuple[np.ndarray, Calibration] | None:
    """``(unmeasured, shipped_level)``: the configurations whose (framework, GPU) pair no
    measured row ran and the calibration they are predicted with (``cal`` with the shipped
    framework offsets); None when ``cal`` records no levels or every configuration is measured.
    ``gpu_keys`` and ``framework_keys`` are what ``c``'s GPU and framework codes index."""
    pilot = cal.intervals.pilot if cal.intervals is not None else None
    if pilot is None or not pilot.measured_levels:
        return None
    unmeasured = ~pilot.measured(c.stack.framework, c.system.gpu_index, gpu_keys, framework_keys)
    unmeasured |= pilot.beyond_reach(c.plan.num_gpus)
    if not unmeasured.any():
        return None
    values = cal.as_dict()
    values.update({offset_name(base, fw): value for fw, base, value in pilot.shipped_offsets})
    return unmeasured, Calibration(frameworks=cal.frameworks, **values, intervals=cal.intervals)


def level_parts(
    unmeasured: np.ndarray, cal: Calibration, shipped_level: Calibration
) -> list[tuple[np.ndarray, Calibration]]:
    """``(row indices, calibration)`` of the measured configurations (``cal``) and of the
    unmeasured ones (``shipped_level``), as :func:`split_by_level` gave them."""
    return [(np.flatnonzero(~unmeasured), cal), (np.flatnonzero(unmeasured), shipped_level)]


def merge_by_level(
    c: Configs,
    unmeasured: np.ndarray,
    cal: Calibration,
    shipped_level: Calibration,
    predict_part: Callable[[Configs, Calibration], dict[str, np.ndarray]],
    gpu_keys: tuple[str, ...],
    framework_keys: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """``predict_part`` the measured configurations with ``cal`` and the others with
    ``shipped_level``, flagged; every metric in the configurations' order."""
    parts = level_parts(unmeasured, cal, shipped_level)
    results = [(index, predict_part(c.take(index), calibration)) for index, calibration in parts]
    out: dict[str, object] = {}
    for name in results[0][1]:
        values = [r[name] for _, r in results]
        if isinstance(values[0], pd.Series):
            merged = np.empty(len(c), dtype=object)
            for (index, _), part in zip(results, values, strict=True):
                merged[index] = part.to_numpy(dtype=object)
            out[name] = pd.Series(pd.array(merged, dtype=values[0].dtype))
        else:
            merged = np.empty(len(c), dtype=np.result_type(*values))
            for (index, _), part in zip(results, values, strict=True):
                merged[index] = part
            out[name] = merged
    flags = out["extrapolation"].astype(object).to_numpy(copy=True)
    framework, gpu = c.stack.framework, c.system.gpu_index
    pilot = cal.intervals.pilot if cal.intervals is not None else None
    ran = (
        pilot.measured(framework, gpu, gpu_keys, framework_keys)
        if pilot is not None
        else unmeasured
    )
    far = distance(c.plan.num_gpus, np.asarray(pilot.pilot_gpus)) if pilot is not None else None
    for i in np.flatnonzero(unmeasured):
        if ran[i] and far is not None:
            flag = f"beyond_pilot_reach:{far[i]:.3g}>{pilot.reach:.3g}"
        else:
            flag = f"unmeasured_level:{framework_keys[framework[i]]}/{gpu_keys[gpu[i]]}"
        flags[i] = ";".join([*([flags[i]] if flags[i] else []), flag])
    out["extrapolation"] = pd.Series(pd.array(flags, dtype=out["extrapolation"].dtype))
    return out  # type: ignore[return-value]
