"""Render with Agg, keep rcParams changes inside each test, and close every figure."""

from __future__ import annotations

import matplotlib as mpl

mpl.use("Agg")

import matplotlib.pyplot as plt
import pytest


@pytest.fixture(autouse=True)
def _isolated_matplotlib():
    with mpl.rc_context():
        yield
    plt.close("all")
