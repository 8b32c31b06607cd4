"""Tests of trainscale.fits._series: the Student-t quantile the fits' intervals use."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from trainscale.fits._series import t_quantile


@pytest.mark.parametrize(
    ("level", "dof", "table"),
    # Two-sided critical values of Student's t, NIST/SEMATECH e-Handbook of Statistical
    # Methods, table 1.3.6.7.2 (upper-tail columns 0.975 and 0.95; 3 decimals).
    [(0.95, 1, 12.706), (0.95, 10, 2.228), (0.95, 30, 2.042), (0.90, 5, 2.015), (0.90, 100, 1.660)],
)
def test_matches_the_published_t_table(level: float, dof: int, table: float) -> None:
    assert t_quantile(level, dof) == pytest.approx(table, abs=5e-4)


@pytest.mark.parametrize("level", [0.5, 0.68, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_equals_scipy_stats_t_ppf_exactly(level: float) -> None:
    # the fits' intervals (and so every table and figure) keep their bytes
    for dof in [*range(1, 300), 1_000, 100_000]:
        assert t_quantile(level, dof) == float(stats.t.ppf(0.5 + level / 2.0, dof)), dof


def test_no_degree_of_freedom_is_nan() -> None:
    assert math.isnan(t_quantile(0.95, 0))
    assert math.isnan(t_quantile(0.95, -3))
