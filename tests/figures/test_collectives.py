"""Tests of the collective figures' data (collective_bandwidth, collective_scaling): what they
select from results/collectives.parquet and the published points they overlay."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.figures.collective_bandwidth import (
    COLLECTIVES,
    NODE_COUNTS,
    _view_limits,
    bandwidth_curves,
    published_points,
)
from trainscale.figures.collective_scaling import GPU_COUNTS, collective_times


def test_bandwidth_curves_are_the_gpus_total_times_on_the_size_sweep(
    collective_curves_table, catalogue
):
    drawn = bandwidth_curves(collective_curves_table)
    assert set(drawn["gpu"]) == {"h100-sxm-80gb"}
    assert set(drawn["model"]) == {""} and set(drawn["term"]) == {"total"}
    assert sorted(set(drawn["num_nodes"])) == list(NODE_COUNTS)
    assert set(drawn["collective"]) == set(COLLECTIVES)
    with pytest.raises(TrainscaleError, match="no curves of GPU 'tpu'"):
        from trainscale.figures.collective_bandwidth import plot

        plot(collective_curves_table, gpu="tpu", hardware=catalogue.hardware)


def test_collective_times_split_allgather_into_its_terms(collective_curves_table):
    times = collective_times(collective_curves_table, ("llama2-7b",))
    wide = times.pivot_table(index="num_gpus", columns="series", values="time_s")
    assert list(wide.index) == list(GPU_COUNTS)
    total = wide["allgather_bandwidth_term"] + wide["allgather_latency_term"]
    assert total.to_numpy() == pytest.approx(wide["allgather"].to_numpy())
    assert (wide["allgather_latency_term"] >= 0).all()
    assert wide.loc[4096, "allgather_latency_term"] > wide.loc[4096, "allgather_bandwidth_term"]
    with pytest.raises(TrainscaleError, match="no per-layer rows of model 'llama3-8b'"):
        collective_times(collective_curves_table, ("llama3-8b",))


def test_published_points_take_their_prediction_from_the_validation_table(
    published_collectives, collective_validation
):
    points = published_points(collective_validation, published_collectives)
    assert points["predicted_busbw_gbytes_per_s"].tolist() == [420.0, 470.0, 230.0]
    assert points["citation"].tolist() == list(published_collectives.collectives["citation"])


def test_collective_bandwidth_fits_its_axes_to_the_published_points():
    points = pd.DataFrame(
        {"size_bytes": [2.0**20, 2.0**30], "observed_busbw_gbytes_per_s": [3.0, 400.0],
         "predicted_busbw_gbytes_per_s": [3.2, 380.0]}
    )  # fmt: skip
    (x0, x1), (y0, y1) = _view_limits(points)
    assert (x0, x1) == (2.0**16, 2.0**34)
    assert (y0, y1) == (1.0, 2e3)  # 3.3 decades, not 7
    assert _view_limits(points.iloc[:0]) == ((2.0**10, 2.0**34), (1e-3, 2e3))
