"""The golden result files under tests/data/golden/ (tests/data/regenerate.py): computed with the
shipped calibration, unchanged since, and what the code computes today (a part of each
recomputed)."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
import yaml

from tests.conftest import golden
from tests.data.regenerate import COMMAND, GOLDEN, MANIFEST, path_of
from trainscale.published.measurements import PublishedData
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue

#: The source recomputed by the spot checks: one of the smallest (6 throughput rows).
SOURCE = "PyTorch/IBM blog: Maximizing training throughput using PyTorch FSDP (Mar 2024)"


def test_every_file_was_computed_with_the_shipped_calibration_and_is_unchanged(
    shipped_calibration: Calibration,
) -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["calibration_id"] == shipped_calibration.calibration_id, (
        f"tests/data/golden/ was computed with calibration {manifest['calibration_id']}, the "
        f"shipped one is {shipped_calibration.calibration_id}: rerun `{COMMAND}`"
    )
    assert sorted(manifest["files"]) == sorted(GOLDEN)
    for name, entry in manifest["files"].items():
        data = path_of(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], f"{name}: edited by hand"
        assert len(golden(name)) == entry["rows"] > 0


def _one_source(published: PublishedData, source: str, *, keep: bool) -> PublishedData:
    rows = published.throughput["citation"] == source
    return PublishedData(
        throughput=published.throughput[rows if keep else ~rows].reset_index(drop=True),
        collectives=published.collectives.iloc[0:0] if keep else published.collectives,
        rejects=published.rejects,
        power_anchor=published.power_anchor,
    )


def test_held_out_of_one_source_is_recomputed_exactly(
    held_out: pd.DataFrame, published: PublishedData, catalogue: Catalogue
) -> None:
    """The rows of one source in golden held_out are those of a fit without the source, as
    trainscale.calibrate.fit.held_out_predictions computes them."""
    from trainscale.calibrate.fit import fit_throughput
    from trainscale.published.accuracy import throughput_predictions

    fit = fit_throughput(_one_source(published, SOURCE, keep=False), catalogue=catalogue)
    rows, _ = throughput_predictions(
        _one_source(published, SOURCE, keep=True), fit.calibration, catalogue
    )
    stored = held_out[held_out["citation"] == SOURCE].reset_index(drop=True)
    assert len(stored) == 6
    pd.testing.assert_frame_equal(rows.reset_index(drop=True), stored)


def test_pilot_errors_of_one_source_are_recomputed_exactly(
    shipped_pilot_errors: pd.DataFrame,
    published: PublishedData,
    shipped_calibration: Calibration,
    catalogue: Catalogue,
) -> None:
    """The rows of one source's scaling series in golden pilot_errors are those
    trainscale.calibrate.pilot_series.pilot_errors computes for it (its base fitted without it)."""
    from trainscale.calibrate.pilot_series import base_without, pilot_errors

    source = str(shipped_pilot_errors["citation"].value_counts(sort=True).index[-1])
    base = base_without(published, source, catalogue=catalogue, shipped=shipped_calibration)
    errors = pilot_errors(
        _one_source(published, source, keep=True), catalogue=catalogue,
        shipped=shipped_calibration, bases={source: base},
    )  # fmt: skip
    stored = shipped_pilot_errors[shipped_pilot_errors["citation"] == source]
    assert len(stored) > 0
    pd.testing.assert_frame_equal(errors, stored.reset_index(drop=True))


def test_a_file_of_another_calibration_fails_naming_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    import tests.conftest

    manifest = yaml.safe_load(MANIFEST.read_text())
    stale = tmp_path / "golden.yaml"
    stale.write_text(yaml.safe_dump({**manifest, "calibration_id": "000000000000"}))
    monkeypatch.setattr(tests.conftest, "MANIFEST", stale)
    with pytest.raises(
        pytest.fail.Exception, match=f"computed with calibration 000000000000.*{COMMAND}"
    ):
        golden("held_out")
