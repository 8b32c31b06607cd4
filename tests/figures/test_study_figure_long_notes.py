"""The per-study figure stays readable whatever the series: a long "Not plotted" list moves to
points.md, and pilot runs outside the study's GPU counts are drawn inside the axis range."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from trainscale.figures.study_scaling import MAX_NOTE_POINTS, plot_scaling
from trainscale.names import Names
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows
from trainscale.tables.study_points import render_points

from .conftest import simulate

_SHIPPED = load_catalogue()
NAMES = Names.of(_SHIPPED.hardware, _SHIPPED.models)
SPEC = ReportSpec(
    x="num_gpus", series=("model",), facet=None, best_of=(), metrics=DEFAULT_METRICS,
    levels={"model": ("llama2-7b",)}, names=NAMES,
)  # fmt: skip


def _notes(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts).replace("\n", " ")


def test_a_long_not_plotted_list_is_counted_in_the_figure_and_listed_in_points_md(
    catalogue, tmp_path: Path
) -> None:
    sim = simulate(model=["llama2-7b"], num_gpus=[64, 256])
    rows = select_rows(sim, SPEC)
    unplanned = [f"Llama-2 7B at {n} GPUs: no plan fits in memory" for n in (8, 16, 32, 4096)]
    assert len(unplanned) > MAX_NOTE_POINTS
    fig = plot_scaling(rows, SPEC, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models, unplanned=unplanned)  # fmt: skip
    text = _notes(fig)
    assert "Not plotted: 4 points the study asked for have no plan" in text
    assert "points.md" in text and "at 4096 GPUs" not in text
    hbm = {key: gpu.hbm_bytes for key, gpu in catalogue.hardware.gpus.items()}
    _, md, _ = render_points(tmp_path / "points", rows, sim, SPEC, hbm, not_plotted=unplanned)
    written = md.read_text()
    assert "**Not plotted**" in written
    assert all(f"- {line}" in written for line in unplanned)
    short = plot_scaling(rows, SPEC, note="setup", hardware=catalogue.hardware,
                         models=catalogue.models, unplanned=unplanned[:1])  # fmt: skip
    assert "Not plotted: Llama-2 7B at 8 GPUs: no plan fits in memory." in _notes(short)


def test_pilots_outside_the_study_counts_are_inside_the_axis(catalogue) -> None:
    sim = simulate(model=["llama2-7b"], num_gpus=[128, 256, 512])
    rows = select_rows(sim, SPEC)
    pilots = pd.DataFrame({"num_gpus": [8, 16], "measured_tokens_per_s_per_gpu": [3000.0, 2900]})
    fig = plot_scaling(rows, SPEC, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models, pilots=pilots)  # fmt: skip
    panel = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens/s per GPU")
    low, high = panel.get_xlim()
    assert low < 8 and high > 512
    crosses = [c for c in panel.collections if c.get_offsets().shape[0] == 2]
    assert crosses and sorted(crosses[-1].get_offsets()[:, 0]) == [8, 16]
