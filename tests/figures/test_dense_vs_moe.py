"""Figure dense_vs_moe's points: the fastest plan per model and GPU count, its exposed
communication split into the expert-parallel all-to-all and the rest."""

from __future__ import annotations

import pytest

from trainscale.figures.dense_vs_moe import best_points


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
