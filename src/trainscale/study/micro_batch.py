"""``micro_batch: auto`` in a study: the largest micro-batch that fits in GPU memory."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.degrees import data_parallel_degree, local_batch
from trainscale.sim.simulate import predict_with_rejects

__all__ = ["resolve_micro_batch"]


def resolve_micro_batch(
    configurations: pd.DataFrame, *, catalogue: Catalogue, calibration: Calibration
) -> pd.DataFrame:
    """Replace ``micro_batch`` = ``"auto"`` by the largest divisor of the local batch
    (``global_batch / dp``) that fits in memory (predicted under ``catalogue`` and
    ``calibration``); 1 when none fits (the row is then kept and flagged by the simulator's
    ``fits_memory``). Other rows are returned unchanged.

    ``dp`` is derived as ``num_gpus / (tp·pp·cp)``; rows where that or the local batch is not an
    integer keep ``micro_batch = 1`` and are rejected later by validation with a clear message.
    """
    frame = configurations.reset_index(drop=True).copy()
    if "micro_batch" not in frame.columns:
        return frame
    auto = frame["micro_batch"].astype(str).str.strip().str.lower() == "auto"
    if not auto.any():
        return frame
    cp = frame["cp"] if "cp" in frame.columns else pd.Series(1, index=frame.index)
    candidates = []
    for position in np.flatnonzero(auto.to_numpy()):
        row = frame.iloc[position]
        dp = data_parallel_degree(int(row["num_gpus"]), int(row["tp"]), int(row["pp"]),
                                  int(cp.iloc[position]))  # fmt: skip
        local = local_batch(int(row["global_batch"]), dp)
        whole = dp > 0 and int(row["global_batch"]) % dp == 0
        divisors = [d for d in range(local, 0, -1) if local % d == 0] if whole else []
        for divisor in divisors or [1]:
            candidates.append({**row.to_dict(), "micro_batch": divisor, "_position": position})
    trial = pd.DataFrame(candidates)
    results, rejects = predict_with_rejects(
        trial.drop(columns="_position"), catalogue=catalogue, calibration=calibration
    )
    rejected = set(rejects["row"]) if not rejects.empty else set()
    valid = [i for i in range(len(trial)) if i not in rejected]  # results keep this order
    trial["_fits"] = False
    trial.loc[valid, "_fits"] = results["fits_memory"].to_numpy()
    frame["micro_batch"] = frame["micro_batch"].astype(object)
    for position, group in trial.groupby("_position", sort=False):
        fitting = group.loc[group["_fits"], "micro_batch"]
        frame.loc[int(position), "micro_batch"] = int(fitting.iloc[0]) if not fitting.empty else 1
    frame["micro_batch"] = pd.to_numeric(frame["micro_batch"])
    return frame
