"""The power anchor of data/published/sources.yaml is the paper's power claim on the paper
setup: the same published fact, read as data by the calibration (which no longer imports the
paper), and the claims' sensitivity scans now live in the paper package."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.calibrate.fit import power_drop_pct
from trainscale.paper import setup
from trainscale.paper.values import PAPER_CLAIM_FROM, PAPER_CLAIM_TO, PAPER_POWER_DROP_PCT
from trainscale.sim.calibration import load_calibration


def test_the_anchor_is_the_papers_claim_on_the_paper_setup(published, catalogue) -> None:
    anchor = published.power_anchor
    assert anchor.drop_pct == PAPER_POWER_DROP_PCT
    assert (anchor.from_gpus, anchor.to_gpus) == (PAPER_CLAIM_FROM, PAPER_CLAIM_TO)
    assert "2411.13055" in anchor.source and anchor.url.startswith("https://")
    calibration = load_calibration()
    paper = setup.paper_configurations(
        gpu_counts=(PAPER_CLAIM_FROM, PAPER_CLAIM_TO), catalogue=catalogue, calibration=calibration
    )
    pd.testing.assert_frame_equal(anchor.configurations(), paper, check_dtype=False)
    assert power_drop_pct(calibration, anchor, catalogue=catalogue) == pytest.approx(
        setup.power_drop_pct(calibration, catalogue=catalogue), abs=1e-12
    )


def test_the_sensitivity_scans_are_in_the_paper_package() -> None:
    from trainscale.paper import sensitivity

    assert callable(sensitivity.claim_sensitivity) and callable(sensitivity.profile)
