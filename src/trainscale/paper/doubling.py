"""Where a scale-out's per-GPU decline happens: the drop over each doubling of the GPU count.

Pure pandas (no simulator), so the figures and tables can use it: the claims table
(:mod:`trainscale.paper.claims`) and figure ``fsdp_scaleout`` both name the doubling with the
largest drop, computed from the rows they show.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["Doubling", "steepest_doubling"]


@dataclass(frozen=True, slots=True)
class Doubling:
    """The largest drop between consecutive GPU counts ``n_from`` → ``n_to`` (a doubling where
    the counts are powers of two); ``drop_pct`` in percent of the ``n_from`` value."""

    n_from: int
    n_to: int
    drop_pct: float

    @property
    def text(self) -> str:
        """e.g. ``1,024→2,048 GPUs: −37.22 %``."""
        return f"{self.n_from:,}→{self.n_to:,} GPUs: −{self.drop_pct:.2f} %"


def steepest_doubling(series: pd.DataFrame, column: str) -> Doubling | None:
    """The step between consecutive ``num_gpus`` of ``series`` (one row per count) where
    ``column`` falls most, in percent; None with fewer than two counts."""
    by_n = series.sort_values("num_gpus").set_index("num_gpus")[column].astype(float)
    if len(by_n) < 2:
        return None
    drops = 100.0 * (1.0 - by_n.to_numpy()[1:] / by_n.to_numpy()[:-1])
    i = int(pd.Series(drops).idxmax())
    return Doubling(int(by_n.index[i]), int(by_n.index[i + 1]), float(drops[i]))
