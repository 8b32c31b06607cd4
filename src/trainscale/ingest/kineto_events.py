"""Damaged events of a Kineto trace are counted and refused, never dropped in silence.

A complete event (``"ph": "X"``) needs a finite ``ts`` and a ``dur`` between 0 and
:data:`MAX_EVENT_US`. HolisticTraceAnalysis drops an event it cannot place; a negative duration
then vanishes from the overlap without a word, and a kept absurd one (10¹⁵ µs) turns a trace of
seconds into years of compute at 100 % overlap.
"""

from __future__ import annotations

import math
from pathlib import Path

from trainscale.errors import InputFileError, clip

__all__ = ["MAX_EVENT_US", "refuse_damaged_events"]

_INT_LIMIT = 2**62


def _is_number(value: object) -> bool:
    """A finite JSON number that fits a float64."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) < _INT_LIMIT if isinstance(value, int) else math.isfinite(value)


#: Longest duration an event may have: one hour in µs. A collective that waits longer is
#: ended by PyTorch's NCCL watchdog (``ProcessGroupNCCL`` timeout, 10 minutes by default:
#: https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group), and a
#: profiled step is far shorter; a longer event is a damaged number.
MAX_EVENT_US = 3.6e9


def refuse_damaged_events(raw_events: list, path: str | Path) -> None:
    """Raise naming the file and counting the complete events (``"ph": "X"``) whose ``ts`` or
    ``dur`` is not a finite number, or whose ``dur`` is negative or above :data:`MAX_EVENT_US`:
    dropped, they would vanish from the overlap without a word; kept, one kernel of 10¹⁵ µs
    makes 31 years of compute."""
    bad = [
        (k, e)
        for k, e in enumerate(raw_events)
        if isinstance(e, dict)
        and e.get("ph") == "X"
        and e.get("cat") != "Trace"
        and not (
            _is_number(e.get("ts")) and _is_number(e.get("dur")) and 0 <= e["dur"] <= MAX_EVENT_US
        )
    ]
    if bad:
        k, first = bad[0]
        raise InputFileError(
            path,
            f"{len(bad):,} complete event(s) with a missing, negative or absurd duration, "
            f"first traceEvents[{k}] {clip(repr(first.get('name')), 80)} (cat "
            f"{clip(repr(first.get('cat')), 40)}) with ts {clip(repr(first.get('ts')), 40)}, "
            f"dur {clip(repr(first.get('dur')), 40)}; allowed: dur 0 to {MAX_EVENT_US:g} µs "
            "(one hour)",
        )
