"""The refits of the command tests, on the shipped catalogues and published data: golden results
(tests/data/regenerate.py, read by :func:`tests.conftest.golden`)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import golden
from tests.data.regenerate import THREE_SOURCES, subset
from trainscale.published.measurements import PublishedData

__all__ = ["THREE_SOURCES", "three_sources"]


def three_sources(published: PublishedData) -> PublishedData:
    """The throughput rows of :data:`THREE_SOURCES`, every collective row, no reject."""
    return subset(published, THREE_SOURCES, collectives=True, rejects=False)


@pytest.fixture(scope="session")
def three_sources_held_out() -> pd.DataFrame:
    """``held_out_predictions(three_sources(published), catalogue=catalogue)`` on the shipped
    data and catalogue: one refit per source, each without it; golden
    ``three_sources_held_out``."""
    return golden("three_sources_held_out")
