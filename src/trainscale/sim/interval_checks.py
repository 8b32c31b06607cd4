"""The checks of a calibration file's ``intervals`` block, each problem naming its key.

Every prediction's 80 % interval is computed from this block, so a value in it that no fit can
produce must stop the file from loading, naming the key, rather than surface later as a
prediction whose ``_lo`` lies above its point (``please report``): a NaN or infinite number
anywhere in the block; ``level`` outside (0, 1); a quantile (a log-space score) negative or
above :data:`MAX_LOG_FACTOR`; the scale slope (a widening per doubling) negative or above
:data:`MAX_LOG_FACTOR`; a pilot reach below 0; a row or source count that is not a whole
number >= 0 (a framework's largest run: >= 1); a pilot bin whose ``lower_log_factor`` is above
0 or whose ``upper_log_factor`` is below 0 (the interval ``predicted × exp(lower) ..
predicted × exp(upper)`` must hold the prediction), or beyond ±:data:`MAX_LOG_FACTOR`; pilot
bins not in increasing order of distance.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

__all__ = ["MAX_LOG_FACTOR", "interval_problems"]

#: Largest log factor of an interval bound or a quantile: exp(5) ≈ 148 times the prediction.
#: The shipped quantiles are 0.12 to 0.23; a fit on real data never comes near.
MAX_LOG_FACTOR = 5.0


def _leaves(value: object, key: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _leaves(item, f"{key}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{key}[{i}]")
    else:
        yield key, value


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: object) -> bool:
    return _number(value) and float(value).is_integer() and float(value) >= 0  # type: ignore[arg-type]


def interval_problems(block: dict[str, Any]) -> list[tuple[str, str]]:
    """Every problem of the ``intervals`` block as ``(key, message)``; ``[]`` when sound."""
    problems = [
        (key, f"{value} is not a finite number")
        for key, value in _leaves(block, "intervals")
        if _number(value) and not math.isfinite(float(value))  # type: ignore[arg-type]
    ]
    if problems:
        return problems
    level = block.get("level")
    if not (_number(level) and 0 < float(level) < 1):  # type: ignore[arg-type]
        problems.append(("intervals.level", f"{level!r} is not between 0 and 1"))
    quantiles = block.get("quantiles") if isinstance(block.get("quantiles"), dict) else {}
    named = [("intervals.pooled_quantile", block.get("pooled_quantile"))]
    named += [(f"intervals.quantiles.{fw}.value", q.get("value")) for fw, q in quantiles.items()
              if isinstance(q, dict)]  # fmt: skip
    for key, value in named:
        if not (_number(value) and 0 <= float(value) <= MAX_LOG_FACTOR):  # type: ignore[arg-type]
            problems.append((key, f"{value!r} is not a quantile between 0 and {MAX_LOG_FACTOR:g}"))
    for fw, q in quantiles.items():
        for name in ("rows", "sources"):
            if isinstance(q, dict) and not _count(q.get(name)):
                problems.append((f"intervals.quantiles.{fw}.{name}", "not a whole number >= 0"))
    facts = block.get("coverage_facts") if isinstance(block.get("coverage_facts"), dict) else {}
    for name, least in (("framework_rows", 0), ("framework_max_gpus", 1)):
        table = facts.get(name) if isinstance(facts.get(name), dict) else {}
        for fw, value in table.items():
            if not (_count(value) and value >= least):
                problems.append((f"intervals.coverage_facts.{name}.{fw}",
                                 f"{value!r} is not a whole number >= {least}"))  # fmt: skip
    slope = block.get("scale_slope", {}).get("value", 0.0) if isinstance(
        block.get("scale_slope"), dict) else block.get("scale_slope", 0.0)  # fmt: skip
    if not (_number(slope) and 0 <= float(slope) <= MAX_LOG_FACTOR):  # type: ignore[arg-type]
        problems.append(("intervals.scale_slope.value", f"{slope!r} is not a widening per "
                         f"doubling between 0 and {MAX_LOG_FACTOR:g}"))  # fmt: skip
    if isinstance(block.get("pilot"), dict):
        problems += _pilot_problems(block["pilot"])
    return problems


def _pilot_problems(pilot: dict[str, Any]) -> list[tuple[str, str]]:
    """The pilot block: bins ordered by distance, each ``lower <= 0 <= upper`` and bounded."""
    problems: list[tuple[str, str]] = []
    bins = pilot.get("bins") if isinstance(pilot.get("bins"), list) else []
    previous = -math.inf
    for i, entry in enumerate(bins):
        key = f"intervals.pilot.bins[{i}]"
        if not isinstance(entry, dict):
            problems.append((key, "expected a mapping"))
            continue
        lower, upper = entry.get("lower_log_factor"), entry.get("upper_log_factor")
        if not (_number(lower) and -MAX_LOG_FACTOR <= float(lower) <= 0):  # type: ignore[arg-type]
            problems.append((f"{key}.lower_log_factor", f"{lower!r} is not between "
                             f"-{MAX_LOG_FACTOR:g} and 0 (the lower bound must be at or below "
                             "the prediction)"))  # fmt: skip
        if not (_number(upper) and 0 <= float(upper) <= MAX_LOG_FACTOR):  # type: ignore[arg-type]
            problems.append((f"{key}.upper_log_factor", f"{upper!r} is not between 0 and "
                             f"{MAX_LOG_FACTOR:g} (the upper bound must be at or above the "
                             "prediction)"))  # fmt: skip
        if not _count(entry.get("rows")):
            problems.append((f"{key}.rows", "not a whole number >= 0"))
        start = entry.get("log2_distance_from")
        if _number(start):
            if float(start) <= previous:  # type: ignore[arg-type]
                problems.append((f"{key}.log2_distance_from", f"{start} is not above the "
                                 "previous bin's: bins go in increasing distance"))  # fmt: skip
            previous = float(start)  # type: ignore[arg-type]
    reach = pilot.get("reach_log2_distance", 0.0)
    if not (_number(reach) and float(reach) >= 0):  # type: ignore[arg-type]
        problems.append(("intervals.pilot.reach_log2_distance", f"{reach!r} is not >= 0"))
    distance = pilot.get("max_log2_distance_measured")
    if not (_number(distance) and float(distance) >= 0):  # type: ignore[arg-type]
        problems.append(("intervals.pilot.max_log2_distance_measured", f"{distance!r} is not >= 0"))
    for i, gpus in enumerate(pilot.get("pilot_gpus") or []):
        if not (_count(gpus) and gpus >= 1):
            problems.append((f"intervals.pilot.pilot_gpus[{i}]", f"{gpus!r} is not a GPU count"))
    return problems
