"""Time, energy and cost to train a number of tokens, from a result table.

For a row predicting ``tokens_per_s`` (and its 80 % interval ``tokens_per_s_per_gpu_lo/hi``),
training ``train_tokens`` tokens takes ``train_tokens / tokens_per_s`` seconds (steady state: no
failures, restarts, checkpoints or evaluations), ``num_gpus`` times that in GPU-hours, costs
``usd_per_gpu_hour`` per GPU-hour, and uses energy per token times ``train_tokens`` at each scope
(GPU board, node, facility; :mod:`trainscale.sim.energy.node`). Intervals: time, GPU-hours and
cost from the throughput interval; node and facility energy from their energy intervals; GPU-board
energy has none (the metered runs that set the intervals are node-level).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.schema import TRAINING_BILL_COLUMNS, names

__all__ = ["BILL_COLUMNS", "parse_train_tokens", "with_training_bill"]

#: The columns :func:`with_training_bill` adds, in order (``schema/columns.yaml``).
BILL_COLUMNS = names(TRAINING_BILL_COLUMNS)
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_J_PER_MWH = 3.6e9
_S_PER_DAY = 86_400.0


def parse_train_tokens(text: str) -> float:
    """``1T``, ``300B``, ``2.5e12``, ``15000000`` -> tokens (SI suffixes K, M, B or G, T);
    anything else, or a count not above 0, is an error naming the value."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*", str(text), re.I)
    value = float(match.group(1)) * _SUFFIX[match.group(2).lower()] if match else float("nan")
    if not np.isfinite(value) or value <= 0:
        raise TrainscaleError(
            f"train tokens {text!r}: expected a positive count such as 1T, 300B, 15M or 2.5e12"
        )
    return value


def with_training_bill(
    result: pd.DataFrame, train_tokens: float, usd_per_gpu_hour: float | None = None
) -> pd.DataFrame:
    """``result`` (with :func:`~trainscale.sim.energy.node.with_node_power`'s columns) plus
    :data:`BILL_COLUMNS` for ``train_tokens`` tokens; cost columns NaN without a price."""
    if not train_tokens > 0:
        raise TrainscaleError(f"train tokens {train_tokens!r}: must be above 0")
    if usd_per_gpu_hour is not None and not usd_per_gpu_hour >= 0:
        raise TrainscaleError(f"usd per GPU-hour {usd_per_gpu_hour!r}: must be 0 or more")
    gpus = result["num_gpus"].to_numpy(np.float64)
    seconds = train_tokens / result["tokens_per_s"].to_numpy(np.float64)
    per_gpu = result["tokens_per_s_per_gpu"].to_numpy(np.float64)
    slow = per_gpu / result["tokens_per_s_per_gpu_lo"].to_numpy(np.float64)
    fast = per_gpu / result["tokens_per_s_per_gpu_hi"].to_numpy(np.float64)
    gpu_hours = gpus * seconds / 3600.0
    price = np.nan if usd_per_gpu_hour is None else float(usd_per_gpu_hour)
    columns = {
        "train_tokens": np.full(len(result), float(train_tokens)),
        "usd_per_gpu_hour": np.full(len(result), price),
        "train_days": seconds / _S_PER_DAY,
        "train_days_lo": seconds * fast / _S_PER_DAY,
        "train_days_hi": seconds * slow / _S_PER_DAY,
        "gpu_hours": gpu_hours,
        "gpu_hours_lo": gpu_hours * fast,
        "gpu_hours_hi": gpu_hours * slow,
        "energy_mwh_gpu": result["energy_j_per_token"].to_numpy(np.float64)
        * train_tokens
        / _J_PER_MWH,
        "cost_usd": gpu_hours * price,
        "cost_usd_lo": gpu_hours * fast * price,
        "cost_usd_hi": gpu_hours * slow * price,
    }
    for scope in ("node", "facility"):
        for end in ("", "_lo", "_hi"):
            joules = result[f"energy_j_per_token_{scope}{end}"].to_numpy(np.float64)
            columns[f"energy_mwh_{scope}{end}"] = joules * train_tokens / _J_PER_MWH
    out = result.drop(columns=[c for c in BILL_COLUMNS if c in result.columns])
    return out.assign(**{name: columns[name] for name in BILL_COLUMNS})
