"""Figure ``fsdp_scaleout`` (the README's headline figure) says where the per-GPU decline happens
and that its shape rests on the assumed global batch; drawn from the paper setup simulated."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.figures.fsdp_scaleout import plot
from trainscale.paper.doubling import steepest_doubling
from trainscale.paper.setup import scaleout
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    catalogue, calibration = load_catalogue(), load_calibration()
    counts = (8, 128, 256, 512, 1024, 2048)
    return pd.concat(
        [
            scaleout(calibration, catalogue=catalogue, model="llama2-7b", gpu_counts=counts),
            scaleout(
                calibration, catalogue=catalogue, model="llama2-70b", gpu_counts=counts,
                recompute="full",
            ),
        ],
        ignore_index=True,
    )  # fmt: skip


def test_note_names_the_doubling_with_the_largest_drop(sim):
    fig = plot(sim, models=load_catalogue().models)
    per_gpu = [
        t.get_text() for ax in fig.axes for t in ax.texts if "tokens/s per GPU" in t.get_text()
    ]
    seven = sim[(sim["model"] == "llama2-7b") & sim["num_gpus"].between(128, 2048)]
    steep = steepest_doubling(seven, "tokens_per_s_per_gpu")
    assert (steep.n_from, steep.n_to) == (1024, 2048)  # the cliff where the local batch is 1
    assert len(per_gpu) == 1 and f"steepest doubling:\n{steep.text}" in per_gpu[0]
    notes = " ".join(t.get_text() for t in fig.texts)
    assert "prediction resting on the global batch of 2,048" in notes
