"""Tests of the figures that compare with real numbers (sim_vs_published, sim_vs_measured)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale import predict
from trainscale.dataset import conform
from trainscale.errors import TrainscaleError
from trainscale.figures import sim_vs_measured, sim_vs_published
from trainscale.schema import DATASET_COLUMNS


def test_throughput_rows_reads_the_workflow_validation_table(validation_rows):
    rows = sim_vs_published.throughput_rows(validation_rows)
    assert rows["citation"].tolist() == ["A", "A", "B"]
    assert rows["observed_tokens_per_s_per_gpu"].tolist() == [100.0, 1000.0, 50.0]


def test_parity_plot_draws_one_series_per_source(validation_rows):
    ax = sim_vs_published.plot_parity(validation_rows)
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["A\nn = 2, MAPE 10.0 %", "B\nn = 1, MAPE 50.0 %"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_predict_measured_predicts_gpu_runs_and_explains_cpu_runs(measured_dataset):
    measured = measured_dataset[measured_dataset["source"] == "measured"]
    table = sim_vs_measured.predict_measured(measured).set_index("run_id")
    gpu_config = measured.set_index("run_id").loc[["gpu_run"], list(sim_vs_measured._CONFIG)]
    direct = predict(gpu_config.dropna(axis=1).reset_index(drop=True))
    assert table.loc["gpu_run", "predicted_step_time_s"] == pytest.approx(
        direct["step_time_s"].iloc[0]
    )
    assert table.loc["gpu_run", "reason"] == ""
    assert np.isnan(table.loc["cpu_run", "predicted_step_time_s"])
    assert "unknown GPU 'cpu'" in table.loc["cpu_run", "reason"]
    assert table.loc["cpu_run", "measured_step_time_s"] == 2.0


def test_sim_vs_measured_with_no_measured_rows_says_so(scaleout_sim):
    dataset = conform(scaleout_sim.assign(study="s"), DATASET_COLUMNS)
    fig = sim_vs_measured.plot(dataset)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    notes = " ".join(t.get_text() for t in fig.texts)
    assert "No measured runs in the dataset" in texts
    assert "Measured: no runs in the dataset" in notes


def test_sim_vs_measured_without_source_column_is_an_error():
    with pytest.raises(TrainscaleError, match="missing column"):
        sim_vs_measured.plot(pd.DataFrame({"x": [1]}))
