"""Tests of trainscale.figures._common: labels, recompute selection, source notes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from trainscale.figures._common import (
    add_source_note,
    compact_number,
    gpu_colors,
    model_colors,
    sim_source,
)
from trainscale.names import gpu_label, model_label
from trainscale.report.select import fastest_recompute, model_order


def test_labels_of_catalogue_keys_and_unknown_keys(catalogue):
    assert model_label("llama2-7b", catalogue.models) == "Llama-2 7B"
    assert model_label("gpt3-175b", catalogue.models) == "GPT-3 175B"
    assert model_label("my-model", catalogue.models) == "my-model"
    assert gpu_label("h100-sxm-80gb", catalogue.hardware) == "H100 80GB"
    assert gpu_label("cpu", catalogue.hardware) == "cpu"


def test_model_order_is_by_parameter_count_then_unknown_by_name(catalogue):
    assert model_order(["llama2-70b", "zz", "llama2-7b", "llama2-1b"], catalogue.models) == [
        "llama2-1b",
        "llama2-7b",
        "llama2-70b",
        "zz",
    ]


def test_fixed_colours_are_distinct_for_featured_keys(catalogue):
    gpus = gpu_colors(catalogue.hardware)
    featured = [
        gpus[k]
        for k in ("v100-sxm-32gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200")
    ]
    assert len(set(featured)) == 5
    models = model_colors(catalogue.models)
    assert len({models[k] for k in ("llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b")}) == 4


def test_fastest_recompute_keeps_the_fastest_fitting_mode_per_count():
    frame = pd.DataFrame(
        {
            "model": ["m"] * 5,
            "num_gpus": [8, 8, 16, 16, 32],
            "recompute": ["none", "full", "none", "full", "full"],
            "fits_memory": [True, True, False, True, False],
            "tokens_per_s": [100.0, 90.0, 300.0, 150.0, 10.0],
        }
    )
    kept = fastest_recompute(frame, ["model"])
    assert kept["num_gpus"].tolist() == [8, 16]  # 32 fits in no mode
    assert kept["recompute"].tolist() == ["none", "full"]  # 16: none does not fit


def test_fastest_recompute_prefers_the_lighter_mode_on_a_tie():
    frame = pd.DataFrame(
        {
            "model": ["m", "m"],
            "num_gpus": [8, 8],
            "recompute": ["full", "none"],
            "fits_memory": [True, True],
            "tokens_per_s": [5.0, 5.0],
        }
    )
    assert fastest_recompute(frame, ["model"])["recompute"].tolist() == ["none"]


def test_compact_number():
    assert [compact_number(v) for v in (0.02, 500, 2000, 50000, 3e6)] == [
        "0.02",
        "500",
        "2k",
        "50k",
        "3M",
    ]


def test_sim_source_names_version_and_calibration():
    rows = pd.DataFrame({"calibration_id": ["abc"], "simulator_version": ["9.9"]})
    assert sim_source(rows) == "Simulated: trainscale 9.9, calibration abc"
    assert sim_source(rows.iloc[:0]) == "Simulated: no rows"  # never read from a catalogue


def test_source_note_is_written_under_the_panels():
    fig, ax = plt.subplots(layout="constrained")
    add_source_note(fig, "Simulated: x", "Published: y")
    fig.canvas.draw()
    note = fig.texts[-1]
    assert note.get_text() == "Simulated: x\nPublished: y"
    note_top = note.get_window_extent().y1
    axes_bottom = ax.get_tightbbox().y0
    assert note_top <= axes_bottom
