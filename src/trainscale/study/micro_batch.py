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
    (``global_batch / dp``) whose predicted memory (under ``catalogue`` and ``calibration``) is
    within the calibration's usable fraction of HBM, not merely within the rejection margin of
    :mod:`trainscale.sim.memory_margin`; 1 when none is (the row is then kept and flagged by the
    simulator). Other rows are returned unchanged.

    ``dp`` is derived as ``num_gpus / (tp·pp·cp)``; rows where that or the local batch is not an
    integer keep ``micro_batch = 1`` and are rejected later by validation with a clear message.
    """
    frame = configurations.reset_index(drop=True).copy()
    if "micro_batch" not in frame.columns:
        return frame
    auto = frame["micro_batch"].astype(str).str.strip().str.lower() == "auto"
    if not auto.any():
        return frame
    positions = np.flatnonzero(auto.to_numpy())
    rows = frame.iloc[positions]
    cp = rows["cp"] if "cp" in rows.columns else pd.Series(1, index=rows.index)
    columns = (rows["num_gpus"], rows["tp"], rows["pp"], cp, rows["global_batch"])
    ints = [pd.to_numeric(c).to_numpy(dtype=np.int64) for c in columns]
    dp = data_parallel_degree(*ints[:4])
    local = local_batch(ints[4], dp)
    whole = (dp > 0) & (ints[4] % np.maximum(dp, 1) == 0)
    divisors = [
        [d for d in range(int(n), 0, -1) if n % d == 0] if ok else [] for n, ok in
        zip(local, whole, strict=True)
    ]  # fmt: skip
    candidates = [d or [1] for d in divisors]
    owner = np.repeat(np.arange(len(positions)), [len(d) for d in candidates])
    trial = rows.iloc[owner].reset_index(drop=True).astype({"micro_batch": object})
    trial["micro_batch"] = [d for ds in candidates for d in ds]
    results, rejects = predict_with_rejects(trial, catalogue=catalogue, calibration=calibration)
    valid = np.setdiff1d(np.arange(len(trial)), rejects["row"].to_numpy(dtype=np.int64))
    fits = np.zeros(len(trial), dtype=bool)
    usable = calibration.memory_usable_fraction * results["gpu"].map(
        lambda gpu: catalogue.hardware.gpus[str(gpu)].hbm_bytes
    )
    fits[valid] = (results["mem_gib_per_gpu"] * 2**30 <= usable).to_numpy()
    # the first (largest) fitting divisor of each row, else 1
    chosen = np.ones(len(positions), dtype=np.int64)
    picked = pd.Series(trial["micro_batch"].to_numpy()[fits]).groupby(owner[fits]).first()
    chosen[picked.index.to_numpy()] = picked.to_numpy(dtype=np.int64)
    frame["micro_batch"] = frame["micro_batch"].astype(object)
    frame.loc[positions, "micro_batch"] = chosen
    frame["micro_batch"] = pd.to_numeric(frame["micro_batch"])
    return frame
