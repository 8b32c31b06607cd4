"""Order statistics: how far the largest of many draws lies above their mean."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["expected_max_standard_normal"]


def expected_max_standard_normal(n: ArrayLike) -> np.ndarray:
    """E[max of n independent standard normals] by Blom's approximation (0 for n = 1)."""
    # scipy.special is imported here, not with the module: it costs about 0.3 s, which every
    # Snakemake start-up (rules/common.smk imports trainscale.study.load) would pay without
    # predicting.
    from scipy.special import ndtri

    n = np.asarray(n, dtype=np.float64)
    if n.ndim == 1 and n.size > 1000:  # a sweep: few distinct GPU counts, each computed once
        codes, distinct = pd.factorize(n)
        return expected_max_standard_normal(distinct)[codes]
    return np.where(n > 1, ndtri((n - 0.375) / (n + 0.25)), 0.0)
