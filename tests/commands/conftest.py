"""The refits of the command tests, started in the background when the tests are collected, in
a subprocess (tests/conftest.py, :func:`register_background`, :func:`call_in_background`), on
the shipped catalogues and published data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import (
    Call,
    background_result,
    call_in_background,
    register_background,
    shipped_inputs,
)
from trainscale.published.measurements import PublishedData

#: The three small sources whose held-out predictions the `validate --holdout` test refits.
THREE_SOURCES = ("torchtitan docs", "PyTorch/IBM", "Shoeybi")


def three_sources(published: PublishedData) -> PublishedData:
    """The throughput rows of :data:`THREE_SOURCES`, every collective row, no reject."""
    keep = published.throughput["citation"].str.startswith(THREE_SOURCES)
    return PublishedData(
        throughput=published.throughput[keep].reset_index(drop=True),
        collectives=published.collectives,
        rejects=published.rejects.iloc[0:0],
        power_anchor=published.power_anchor,
    )


def _three_sources_held_out(folder: Path) -> Call:
    """Background work of :func:`three_sources_held_out`."""
    catalogue, published = shipped_inputs()
    return call_in_background(
        folder,
        "trainscale.calibrate.fit:held_out_predictions",
        three_sources(published),
        catalogue=catalogue,
    )


@pytest.fixture(scope="session")
def three_sources_held_out(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """``held_out_predictions(three_sources(published), catalogue=catalogue)`` on the shipped
    data and catalogue: one refit per source, each without it."""
    return background_result("three_sources_held_out", tmp_path_factory).result()


register_background("three_sources_held_out", _three_sources_held_out)
