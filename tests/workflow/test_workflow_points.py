"""A study of the user's own gets reports/studies/<study>/points.{csv,md}: one row per plotted
point naming the winning plan, marked where it changes."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.workflow._user_studies import SWITCH

pytestmark = pytest.mark.workflow

NAME = SWITCH


def test_a_study_whose_winning_plan_switches_names_it_in_points(user_studies_run) -> None:
    """The study :data:`tests.workflow._user_studies.SWITCH_STUDY`, built in the shared run of the
    users' studies (fixture user_studies_run)."""
    out = user_studies_run.check() / "reports" / "studies" / NAME
    points = pd.read_csv(out / "points.csv")
    assert list(points["num_gpus"]) == [256, 512, 1024, 2048]
    assert list(points["tp"]) == [2, 2, 2, 4]
    assert list(points["plan_changed"]) == [False, False, False, True]
    assert (points["runner_up_margin_pct"] > 0).all()
    assert points["runner_up_plan"].str.len().gt(0).all()
    markdown = (out / "points.md").read_text()
    assert "pytorch · tp 4 · pp 1 · cp 1 · vpp 1 · fsdp · none · mb 2" in markdown
