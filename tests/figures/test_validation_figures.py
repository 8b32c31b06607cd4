"""Tests of the figures that compare with real numbers (sim_vs_published, sim_vs_measured)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.figures import sim_vs_measured, sim_vs_published
from trainscale.schema import SIM_VS_MEASURED_COLUMNS, names


def test_throughput_rows_reads_the_workflow_validation_table(validation_rows):
    rows = sim_vs_published.throughput_rows(validation_rows)
    assert rows["citation"].tolist() == ["A", "A", "B"]
    assert rows["observed_tokens_per_s_per_gpu"].tolist() == [100.0, 1000.0, 50.0]


def test_error_plot_shows_held_out_percent_error_per_source(holdout_rows):
    ax = sim_vs_published.plot_errors(holdout_rows)
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["A (2): 20.0 %", "B (1): 60.0 %"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
    points = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections if len(c.get_offsets())])
    assert sorted(points) == pytest.approx([-20.0, 20.0, 60.0])  # percent, not tokens/s
    low, high = ax.get_ylim()
    assert low <= -20 and high == 100.0
    plt.close(ax.figure)


def test_errors_beyond_the_axis_are_drawn_on_its_edge_and_counted(holdout_rows):
    rows = holdout_rows.assign(error_pct=[20.0, -20.0, 250.0])
    ax = sim_vs_published.plot_errors(rows, x="observed_tokens_per_s_per_gpu")
    texts = [t.get_text() for t in ax.texts]
    assert any("1 above +100 %" in t and "max +250 %" in t for t in texts), texts
    edge = [c.get_offsets()[:, 1].tolist() for c in ax.collections]
    assert [100.0] in edge
    plt.close(ax.figure)


def test_source_styles_tell_twenty_sources_apart():
    styles = sim_vs_published.source_styles([f"source {i:02d}" for i in range(20)])
    assert len(set(styles.values())) == 20
    assert len({color for color, _ in styles.values()}) >= 10


def test_figure_says_it_is_held_out_and_gives_the_in_sample_mape(holdout_rows, validation_rows):
    fig = sim_vs_published.plot(holdout_rows, validation_rows)
    title = fig.get_suptitle()
    notes = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "Held out: each source predicted by a fit without it" in title
    assert "In sample" in notes and "23.3 %" in notes
    plt.close(fig)


def test_sim_vs_measured_with_no_measured_rows_says_so(catalogue):
    empty = pd.DataFrame(columns=names(SIM_VS_MEASURED_COLUMNS))
    fig = sim_vs_measured.plot(empty, hardware=catalogue.hardware)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    notes = " ".join(t.get_text() for t in fig.texts)
    assert "No measured runs in the dataset" in texts
    assert "Measured: no runs in the dataset" in notes


def test_sim_vs_measured_without_its_columns_is_an_error(catalogue):
    with pytest.raises(TrainscaleError, match="missing column"):
        sim_vs_measured.plot(pd.DataFrame({"x": [1]}), hardware=catalogue.hardware)


def test_sim_vs_measured_names_each_run_once():
    assert sim_vs_measured._run_name("hta", "hta:resnet") == "hta:resnet"
    assert sim_vs_measured._run_name("run", "l2-h128") == "run l2-h128"
