"""Figure dense_vs_moe's points: the fastest plan per model and GPU count, its exposed
communication split into the expert-parallel all-to-all and the rest."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.figures.dense_vs_moe import best_points, plot
from trainscale.sim.simulate import predict


def test_exposed_communication_splits_into_alltoall_and_the_rest(moe_sim) -> None:
    points = best_points(moe_sim)
    assert set(points["model"]) == {"llama3-70b", "qwen3-30b-a3b"}
    total = 100 * points["exposed_comm_s"] / points["step_time_s"]
    assert (points["alltoall_pct"] + points["other_comm_pct"]).to_numpy() == pytest.approx(
        total.to_numpy()
    )
    dense = points[points["model"] == "llama3-70b"]
    assert (dense["alltoall_pct"] == 0).all()
    moe = points[points["model"] == "qwen3-30b-a3b"]
    assert (moe["alltoall_pct"] > 0).all() and (moe["ep"] == 8).all()


def test_one_row_of_panels_per_gpu_on_shared_scales(moe_sim, catalogue) -> None:
    inputs = ["model", "seq_len", "global_batch", "micro_batch", "num_gpus", "tp", "pp", "ep",
              "sharding", "recompute", "precision", "framework"]  # fmt: skip
    b200 = predict(moe_sim[inputs].assign(gpu="b200"))
    fig = plot(pd.concat([moe_sim, b200], ignore_index=True), hardware=catalogue.hardware,
               models=catalogue.models)  # fmt: skip
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[0].startswith("(a) H100") and titles[3].startswith("(d) B200")
    assert len(titles) == 6
    tps = [ax for ax in fig.axes if "throughput" in ax.get_title()]
    assert tps[0].get_ylim() == tps[1].get_ylim()  # one scale per column
    top = max(line.get_ydata().max() for ax in tps for line in ax.get_lines())
    assert tps[0].get_ylim()[1] >= top  # no point cut off
