"""Refits shared by the calibration tests, each a few fits long, on the shipped catalogues and
published data: golden results (tests/data/regenerate.py, read by :func:`tests.conftest.golden`)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

from tests.conftest import golden
from tests.data.regenerate import TWO_SOURCES, subset
from trainscale.published.measurements import PublishedData
from trainscale.sim.calibration import load_calibration


@pytest.fixture(scope="session")
def latency_profile() -> pd.DataFrame:
    """``profile("nccl_latency_scale", [calibrated, 2.0, 0.5], published, catalogue=catalogue)``
    with the fixtures published and catalogue (the shipped data): one refit per value; golden
    ``latency_profile``."""
    return golden("latency_profile")


def two_sources(published: PublishedData) -> PublishedData:
    """The throughput rows of two PyTorch sources, no collective row."""
    return subset(published, TWO_SOURCES, collectives=False, rejects=True)


@dataclass(frozen=True)
class UnprioredScan:
    """Without a prior (``prior_scale=math.inf``), on ``data``: the prior width scan and
    leave-one-source-out (:func:`unpriored_scan`)."""

    data: PublishedData
    scan: pd.DataFrame
    held_out: pd.DataFrame


@pytest.fixture(scope="session")
def unpriored_scan(published: PublishedData) -> UnprioredScan:
    """``data = two_sources(published)`` of the fixture published (the shipped data), and on it,
    with the fixture catalogue, ``prior_width_scan([math.inf], data)`` and
    ``leave_one_source_out(data, prior_scale=math.inf)``: one fit per source each; golden
    ``unpriored_scan`` and ``unpriored_held_out``."""
    return UnprioredScan(
        two_sources(published), golden("unpriored_scan"), golden("unpriored_held_out")
    )


@pytest.fixture
def known_pilot_errors(
    shipped_pilot_errors: pd.DataFrame, published: PublishedData, monkeypatch: pytest.MonkeyPatch
) -> pd.DataFrame:
    """In this test :func:`trainscale.calibrate.pilot_series.pilot_errors` returns
    :func:`shipped_pilot_errors` when it measures the pilot errors of the shipped published data
    and calibration, and measures them as usual on anything else (a user calibration on a base
    without stored pilot errors)."""
    from trainscale.calibrate import pilot_series

    measure = pilot_series.pilot_errors
    shipped_id = load_calibration().calibration_id
    key = pd.util.hash_pandas_object(published.throughput, index=False).sum()

    def reuse(data: PublishedData, **kwargs: object) -> pd.DataFrame:
        same = pd.util.hash_pandas_object(data.throughput, index=False).sum() == key
        shipped = kwargs.get("shipped")
        if same and getattr(shipped, "calibration_id", None) == shipped_id:
            return shipped_pilot_errors.copy()
        return measure(data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pilot_series, "pilot_errors", reuse)
    return shipped_pilot_errors
