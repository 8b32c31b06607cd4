"""Refits shared by the sensitivity tests, each a few fits long: started in the background when
the tests are collected, each in a subprocess (tests/conftest.py, :func:`register_background`,
:func:`call_in_background`), on the shipped catalogues and published data."""

from __future__ import annotations

import math
from dataclasses import dataclass
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
from trainscale.sim.calibration import load_calibration


def latency_profile_values() -> list[float]:
    """The calibrated NCCL latency scale, twice NCCL's table and half of it."""
    return [load_calibration().nccl_latency_scale, 2.0, 0.5]


def _latency_profile(folder: Path) -> Call:
    """Background work of :func:`latency_profile`."""
    catalogue, published = shipped_inputs()
    values = latency_profile_values()
    profile = "trainscale.paper.sensitivity:profile"
    return call_in_background(
        folder, profile, "nccl_latency_scale", values, published, catalogue=catalogue
    )


@pytest.fixture(scope="session")
def latency_profile(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """``profile("nccl_latency_scale", latency_profile_values(), published, catalogue=catalogue)``
    with the fixtures published and catalogue (the shipped data): one refit per value."""
    return background_result("latency_profile", tmp_path_factory).result()


def two_sources(published: PublishedData) -> PublishedData:
    """The throughput rows of two PyTorch sources, no collective row."""
    keep = published.throughput["citation"].str.startswith(("PyTorch/IBM", "torchtitan docs"))
    return PublishedData(
        throughput=published.throughput[keep].reset_index(drop=True),
        collectives=published.collectives.iloc[0:0],
        rejects=published.rejects,
        power_anchor=published.power_anchor,
    )


def _unpriored_scan(folder: Path) -> tuple[Call, Call]:
    """Background work of :func:`unpriored_scan`: the two calls, one after the other."""
    catalogue, published = shipped_inputs()
    small = two_sources(published)
    scan = call_in_background(
        folder,
        "trainscale.paper.sensitivity:prior_width_scan",
        [math.inf],
        small,
        catalogue=catalogue,
    )
    held_out = call_in_background(
        folder,
        "trainscale.calibrate.fit:leave_one_source_out",
        small,
        catalogue=catalogue,
        prior_scale=math.inf,
    )
    return scan, held_out


@dataclass(frozen=True)
class UnprioredScan:
    """Without a prior (``prior_scale=math.inf``), on ``data``: the prior width scan and
    leave-one-source-out (:func:`unpriored_scan`)."""

    data: PublishedData
    scan: pd.DataFrame
    held_out: pd.DataFrame


@pytest.fixture(scope="session")
def unpriored_scan(
    published: PublishedData, tmp_path_factory: pytest.TempPathFactory
) -> UnprioredScan:
    """``data = two_sources(published)`` of the fixture published (the shipped data), and on it,
    with the fixture catalogue, ``prior_width_scan([math.inf], data)`` and
    ``leave_one_source_out(data, prior_scale=math.inf)``: one fit per source each. Computed in
    the background, on the same data and catalogue loaded there (:func:`shipped_inputs`)."""
    scan, held_out = background_result("unpriored_scan", tmp_path_factory)
    return UnprioredScan(two_sources(published), scan.result(), held_out.result())


def _shipped_pilot_errors(folder: Path) -> Call:
    """Background work of :func:`shipped_pilot_errors`."""
    catalogue, published = shipped_inputs()
    return call_in_background(
        folder,
        "trainscale.calibrate.pilot_series:pilot_errors",
        published,
        catalogue=catalogue,
        shipped=load_calibration(),
    )


@pytest.fixture(scope="session")
def shipped_pilot_errors(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """``pilot_errors(published, catalogue=catalogue, shipped=load_calibration())`` on the shipped
    data: one base fit per source, about twenty seconds, computed once in the background."""
    return background_result("shipped_pilot_errors", tmp_path_factory).result()


@pytest.fixture
def known_pilot_errors(
    shipped_pilot_errors: pd.DataFrame, published: PublishedData, monkeypatch: pytest.MonkeyPatch
) -> pd.DataFrame:
    """``trainscale calibrate --measurements`` in this test reuses :func:`shipped_pilot_errors`
    when it measures the pilot errors of the shipped published data and calibration (what every
    user calibration does first), and measures them as usual on anything else. That the
    reused rows are the ones a command measures is checked by
    tests/calibrate/test_user.py::test_same_measurements_give_the_same_file_byte_for_byte."""
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


register_background("latency_profile", _latency_profile)
register_background("shipped_pilot_errors", _shipped_pilot_errors)
register_background("unpriored_scan", _unpriored_scan)
