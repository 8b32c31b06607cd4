"""The theme written out in trainscale.report.palette is seaborn 0.13.2's, and drawing a figure
no longer imports seaborn."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, with_source
from trainscale.report import palette

sns = pytest.importorskip("seaborn", reason="seaborn (the .[test] extra) is the reference")


def test_the_style_and_context_are_seaborns() -> None:
    style = dict(sns.axes_style("ticks"))
    assert style.pop("image.cmap") == "rocket"  # left out: style.RC sets viridis
    assert style == palette.TICKS_STYLE
    assert dict(sns.plotting_context("paper")) == palette.PAPER_CONTEXT


@pytest.mark.parametrize("n", [None, 1, 3, 10, 13])
def test_colorblind_is_seaborns(n: int | None) -> None:
    assert palette.colorblind(n) == list(sns.color_palette("colorblind", n))


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_a_colormap_palette_is_seaborns(n: int) -> None:
    assert palette.colormap_palette("viridis", n) == list(sns.color_palette("viridis", n))


def test_a_figure_job_does_not_import_seaborn() -> None:
    code = (
        "import sys, matplotlib; matplotlib.use('Agg');"
        "import trainscale.figures, trainscale.report.style as s;"
        "from trainscale.figures import FIGURES;"
        "import importlib; [importlib.import_module(f'trainscale.figures.{n}') for n in FIGURES];"
        "s.apply_style();"
        "print('seaborn' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
        env=with_source(dict(os.environ)),
    )  # fmt: skip
    assert done.stdout.strip() == "False", done.stderr
