"""Megatron-LM's batch-size ramp-up: the first steps of a log run at a smaller global batch.

With ``--rampup-batch-size <start> <increment> <samples>`` Megatron-LM grows the global batch
from ``start`` by ``increment`` until ``samples`` samples have been consumed, then trains at
``--global-batch-size`` (``megatron/training/arguments.py``;
``RampupBatchsizeNumMicroBatchesCalculator`` in
``megatron/core/num_microbatches_calculator.py``); each iteration line logs the batch it used
(``global batch size: N``). Those steps measure another configuration, so they are excluded from
the steady state like warm-up steps, and said so; the manifest's ``global_batch`` is the final
one. A logged batch that is not such a ramp (above the manifest's, falling, or smaller again
after reaching it) is still an error (:mod:`trainscale.ingest.plausibility`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["announce_ramp", "batch_ramp"]


def batch_ramp(steps: pd.DataFrame, cfg: dict[str, Any]) -> int:
    """How many leading steps of ``steps`` ramp the global batch up to the manifest's
    ``global_batch`` (0 when none do, or when the logged batches are not a ramp)."""
    if "global_batch" not in steps or not cfg.get("global_batch"):
        return 0
    logged = pd.to_numeric(steps["global_batch"], errors="coerce").to_numpy(dtype=float)
    final = float(cfg["global_batch"])
    known = logged[np.isfinite(logged)]
    if not known.size or known[0] >= final:
        return 0
    reached = np.flatnonzero(logged == final)
    if not reached.size:
        return 0
    ramp = int(reached[0])
    head = logged[:ramp][np.isfinite(logged[:ramp])]
    after = logged[ramp:][np.isfinite(logged[ramp:])]
    if (np.diff(head) < 0).any() or (head > final).any() or (after != final).any():
        return 0
    return ramp


def announce_ramp(steps: pd.DataFrame, cfg: dict[str, Any], path: str | Path) -> int:
    """:func:`batch_ramp`, said on stderr (:func:`warnings.warn`) naming the file, the steps and
    the batches when there is a ramp (not kept as a warning of the row: the log is sound)."""
    ramp = batch_ramp(steps, cfg)
    if ramp:
        logged = pd.to_numeric(steps["global_batch"], errors="coerce").iloc[:ramp].dropna()
        warnings.warn(
            f"{path}: the first {ramp} step(s) ramp the global batch up from "
            f"{logged.iloc[0]:g} to {logged.iloc[-1]:g} before the manifest's "
            f"{cfg['global_batch']} (Megatron --rampup-batch-size); they are excluded from the "
            "steady state with the warm-up",
            RuntimeWarning,
            stacklevel=2,
        )
    return ramp
