"""Scale bands: accuracy is reported per band of GPU count, because a pooled figure is dominated
by the many small runs while a planner's question is usually about the few large ones.

:data:`SCALE_BANDS` are ≤ 256, 257–1,024 and > 1,024 GPUs; :func:`scale_band` labels rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["SCALE_BANDS", "in_band_order", "scale_band"]

#: Band label -> (smallest, largest) GPU count in it.
SCALE_BANDS: dict[str, tuple[float, float]] = {
    "≤ 256 GPUs": (1, 256),
    "257–1,024 GPUs": (257, 1024),
    "> 1,024 GPUs": (1025, np.inf),
}


def scale_band(num_gpus: pd.Series) -> pd.Series:
    """The :data:`SCALE_BANDS` label of each GPU count (same index)."""
    n = pd.to_numeric(num_gpus).to_numpy(dtype=float)
    labels = np.select([n <= 256, n <= 1024], list(SCALE_BANDS)[:2], default=list(SCALE_BANDS)[2])
    return pd.Series(labels, index=num_gpus.index, name="scale_band")


def in_band_order(table: pd.DataFrame, column: str = "scale_band") -> pd.DataFrame:
    """``table``'s rows whose ``column`` is a band, in :data:`SCALE_BANDS` order (bands without
    rows left out)."""
    order = {label: i for i, label in enumerate(SCALE_BANDS)}
    rows = table[table[column].isin(order)]
    return rows.iloc[np.argsort(rows[column].map(order).to_numpy(), kind="stable")]
