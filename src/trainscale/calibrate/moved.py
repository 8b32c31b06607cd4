"""What a user calibration moved: per software stack and GPU, how much it changes the predicted
tokens/s per GPU, and whether a measured row pinned that pair.

A user calibration refits framework-wide levels and cluster-wide network terms
(:mod:`trainscale.calibrate.user`), so it also moves stacks and GPUs that no measured row ran:
pilots of PyTorch on H100 move PyTorch on B200 (the offset belongs to the framework), and leave
Megatron where it was. :func:`level_changes` makes that visible: each measured configuration is
predicted again on every (framework, GPU) pair, under the base calibration and under the user's,
and the median change is reported with ``measured`` (a measured row ran that framework on that
GPU) beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.schema import CONFIGURATION_COLUMNS
from trainscale.sim.simulate import predict_with_rejects

if TYPE_CHECKING:
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["LEVEL_CHANGE_COLUMNS", "level_changes"]

#: Columns of :func:`level_changes`.
LEVEL_CHANGE_COLUMNS = ("framework", "gpu", "measured", "rows", "moved_pct")

#: The configuration of a measured row that travels to another stack and GPU: the model, batch
#: and plan (not the system, behaviour overrides or power limit, which belong to the row's own
#: GPU and stack).
_KEPT = (
    "model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len",
    "global_batch", "micro_batch", "num_gpus", "tp", "pp", "cp", "vpp", "sharding", "recompute",
    "precision", "sequence_parallel",
)  # fmt: skip


def level_changes(
    rows: pd.DataFrame, base: Calibration, calibrated: Calibration, catalogue: Catalogue
) -> pd.DataFrame:
    """Per framework (``catalogue.framework_keys``, in order) and catalogue GPU: ``measured``
    (some row of ``rows`` ran that framework on that GPU), ``rows`` (the measured configurations
    valid there) and ``moved_pct``: the median change of their predicted tokens/s per GPU from
    ``base`` to ``calibrated``, % (NaN where none is valid)."""
    names = {c.name for c in CONFIGURATION_COLUMNS}
    kept = [c for c in _KEPT if c in rows.columns and c in names]
    configs = rows[kept].reset_index(drop=True)
    ran = set(zip(rows["framework"].astype(str), rows["gpu"].astype(str), strict=True))
    out = []
    for framework in catalogue.framework_keys:
        for gpu in catalogue.hardware.gpus:
            frame = configs.assign(framework=framework, gpu=gpu)
            before, _ = predict_with_rejects(frame, catalogue=catalogue, calibration=base)
            after, _ = predict_with_rejects(frame, catalogue=catalogue, calibration=calibrated)
            change = 100.0 * (
                after["tokens_per_s_per_gpu"].to_numpy() / before["tokens_per_s_per_gpu"].to_numpy()
                - 1.0
            )
            moved = float(np.median(change)) if len(change) else np.nan
            out.append({
                "framework": framework, "gpu": gpu, "measured": (framework, gpu) in ran,
                "rows": len(change), "moved_pct": moved,
            })  # fmt: skip
    return pd.DataFrame(out, columns=list(LEVEL_CHANGE_COLUMNS))
