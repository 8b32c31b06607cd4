"""Regenerate the tests' golden result files: ``python tests/data/regenerate.py``.

Each file under ``tests/data/golden/`` is a result that several tests read and that takes one or
more refits of the calibration on the shipped published data (seconds to a minute each on a
2-core machine): computed here once, with the shipped catalogues, published measurements and
calibration (``data/``), instead of at every test session. ``tests/data/golden.yaml`` records the
``calibration_id`` they were computed with; the ``golden`` fixture (tests/conftest.py) fails every
test that reads them, naming this command, once the shipped calibration has another id (a refit
``trainscale calibrate -o data/calibration.yaml`` after any change to the simulator, catalogues or
published data). tests/test_golden.py recomputes a part of each file and compares.

Run from the repository root (``PYTHONPATH=src`` unless the package is installed); a few minutes.
Every file is written as Parquet and read back before it is kept: what the tests read is exactly
what was computed.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import yaml

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "golden"
MANIFEST = HERE / "golden.yaml"
COMMAND = "python tests/data/regenerate.py"

#: The three small sources whose held-out predictions the `validate --holdout` test reads.
THREE_SOURCES = ("torchtitan docs", "PyTorch/IBM", "Shoeybi")
#: The two PyTorch sources of the prior-scan test.
TWO_SOURCES = ("PyTorch/IBM", "torchtitan docs")


def latency_profile_values(calibration: Calibration) -> list[float]:
    """The calibrated NCCL latency scale, twice NCCL's table and half of it."""
    return [calibration.nccl_latency_scale, 2.0, 0.5]


def subset(
    published: PublishedData, prefixes: tuple[str, ...], *, collectives: bool, rejects: bool
) -> PublishedData:
    """The throughput rows of the sources whose citation starts with one of ``prefixes``, with
    every collective row or none, every reject or none."""
    from trainscale.published.measurements import PublishedData

    keep = published.throughput["citation"].str.startswith(prefixes)
    return PublishedData(
        throughput=published.throughput[keep].reset_index(drop=True),
        collectives=published.collectives if collectives else published.collectives.iloc[0:0],
        rejects=published.rejects if rejects else published.rejects.iloc[0:0],
        power_anchor=published.power_anchor,
    )


def _held_out(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.calibrate.fit import held_out_predictions

    return held_out_predictions(published, catalogue=catalogue)


def _pilot_errors(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.calibrate.pilot_series import pilot_errors

    return pilot_errors(published, catalogue=catalogue, shipped=calibration)


def _latency_profile(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.paper.sensitivity import profile

    values = latency_profile_values(calibration)
    return profile("nccl_latency_scale", values, published, catalogue=catalogue)


def _two_sources(published: PublishedData) -> PublishedData:
    return subset(published, TWO_SOURCES, collectives=False, rejects=True)


def _unpriored_scan(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.paper.sensitivity import prior_width_scan

    return prior_width_scan([math.inf], _two_sources(published), catalogue=catalogue)


def _unpriored_held_out(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.calibrate.fit import leave_one_source_out

    small = _two_sources(published)
    return leave_one_source_out(small, catalogue=catalogue, prior_scale=math.inf)


def _three_sources_held_out(
    catalogue: Catalogue, published: PublishedData, calibration: Calibration
) -> pd.DataFrame:
    from trainscale.calibrate.fit import held_out_predictions

    small = subset(published, THREE_SOURCES, collectives=True, rejects=False)
    return held_out_predictions(small, catalogue=catalogue)


#: name -> (what it is, how it is computed from the shipped catalogue, published data and
#: calibration). The file is golden/<name>.parquet.
GOLDEN: dict[str, tuple[str, Callable[..., pd.DataFrame]]] = {
    "held_out": (
        "trainscale.calibrate.fit.held_out_predictions(published): every published throughput "
        "row predicted by a fit without its source (one refit per source)",
        _held_out,
    ),
    "pilot_errors": (
        "trainscale.calibrate.pilot_series.pilot_errors(published, shipped=calibration): the "
        "errors of pilot-calibrated predictions on the published scaling series",
        _pilot_errors,
    ),
    "latency_profile": (
        "trainscale.paper.sensitivity.profile('nccl_latency_scale', [calibrated, 2.0, 0.5]): "
        "one refit per value",
        _latency_profile,
    ),
    "unpriored_scan": (
        "trainscale.paper.sensitivity.prior_width_scan([inf]) on the two sources TWO_SOURCES "
        "(throughput rows only)",
        _unpriored_scan,
    ),
    "unpriored_held_out": (
        "trainscale.calibrate.fit.leave_one_source_out(prior_scale=inf) on the same two sources",
        _unpriored_held_out,
    ),
    "three_sources_held_out": (
        "trainscale.calibrate.fit.held_out_predictions on THREE_SOURCES' throughput rows and "
        "every collective row",
        _three_sources_held_out,
    ),
}


def shipped() -> tuple[Catalogue, PublishedData, Calibration]:
    """The shipped catalogue, published measurements and calibration (``data/``)."""
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue

    catalogue = load_catalogue()
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys
    )
    return catalogue, published, load_calibration()


def path_of(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.parquet"


def _write(name: str, frame: pd.DataFrame) -> str:
    """Write ``frame`` to golden/<name>.parquet, check it reads back equal; its sha256."""
    path = path_of(name)
    frame.to_parquet(path, index=False)
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame.reset_index(drop=True))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(names: list[str]) -> int:
    """Regenerate ``names`` (all when empty) and the manifest."""
    from trainscale.version import __version__

    unknown = sorted(set(names) - set(GOLDEN))
    if unknown:
        print(f"unknown golden file(s) {', '.join(unknown)}; known: {', '.join(GOLDEN)}")
        return 2
    catalogue, published, calibration = shipped()
    GOLDEN_DIR.mkdir(exist_ok=True)
    manifest = yaml.safe_load(MANIFEST.read_text()) if MANIFEST.exists() else {}
    files = {} if not names else dict(manifest.get("files", {}))
    if names and manifest.get("calibration_id") != calibration.calibration_id:
        print("the calibration changed: regenerate every file (no names)")
        return 2
    for name in names or list(GOLDEN):
        what, compute = GOLDEN[name]
        start = time.perf_counter()
        frame = compute(catalogue, published, calibration)
        files[name] = {"what": what, "rows": len(frame), "sha256": _write(name, frame)}
        print(f"{path_of(name).relative_to(HERE.parents[1])}: {len(frame)} rows "
              f"({time.perf_counter() - start:.0f} s)")  # fmt: skip
    document = {
        "calibration_id": calibration.calibration_id,
        "simulator_version": __version__,
        "command": COMMAND,
        "files": files,
    }
    MANIFEST.write_text(yaml.safe_dump(document, sort_keys=False, width=100))
    print(f"{MANIFEST.relative_to(HERE.parents[1])}: calibration_id {calibration.calibration_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
