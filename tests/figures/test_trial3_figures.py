"""Figure findings of the third user trial (items 9-13 and 16), each checked on the drawn
figure: lines break at missing points, the micro-batch switch is marked, labels say whose shape
a model has, log axes carry a label above the data, twin-axis labels do not sit side by side,
and tick labels turn the same way."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from tests.figures.conftest import simulate


def test_model_parallel_breaks_a_line_at_a_degree_with_no_plan() -> None:
    from trainscale.figures.model_parallel import _with_gaps

    series = pd.DataFrame({"degree": [1, 4, 8], "tokens_per_s": [3e6, 2e6, 1e6]})
    x, y = _with_gaps(series, [1, 2, 4, 8, 16])
    assert x == [1, 2, 4, 8]  # from the first to the last point, not beyond
    assert math.isnan(y[1]) and y[0] == 3.0 and y[3] == 1.0
    assert _with_gaps(series.iloc[0:0], [1, 2]) == ([], [])


def test_hardware_generations_marks_the_micro_batch_switch_in_every_panel(
    hardware_sim, catalogue
) -> None:
    from trainscale.figures.hardware_generations import plot

    fig = plot(hardware_sim, hardware=catalogue.hardware, models=catalogue.models)
    panels = [ax for ax in fig.axes if ax.get_ylabel()]
    assert len(panels) == 3
    for ax in panels:
        dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
        assert [line.get_xdata()[0] for line in dotted] == [2048]
    texts = " ".join(t.get_text() for t in fig.texts) + " ".join(
        t.get_text() for ax in panels for t in ax.texts
    )
    texts = " ".join(texts.split())
    assert "micro-batch 2 → 1" in texts and "not from the GPUs" in texts
    plt.close(fig)


def test_power_efficiency_names_the_tinyllama_shape_and_labels_above_the_data(
    catalogue,
) -> None:
    from trainscale.figures.power_efficiency import _next_125, _previous_125, plot

    assert (_next_125(72.0), _next_125(100.0), _next_125(1.3)) == (100.0, 100.0, 2.0)
    assert (_previous_125(1.6), _previous_125(0.07), _previous_125(5.0)) == (1.0, 0.05, 5.0)
    sim = simulate(model=["llama2-1b", "llama2-7b"], num_gpus=[8, 128])
    fig = plot(sim, models=catalogue.models)
    legend = " ".join(t.get_text() for t in fig.findobj(plt.Text))
    assert "Llama-2 1B (TinyLlama-1.1B shape)" in legend
    absolute = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens per joule (tokens/J)")
    top = absolute.get_ylim()[1]
    assert top == _next_125(top)  # a labelled 1-2-5 tick at the top
    plt.close(fig)


def test_compute_per_gpu_labels_the_twin_axis_once_on_the_outer_panel(
    compute_sim, catalogue
) -> None:
    from trainscale.figures.compute_per_gpu import plot

    two = pd.concat([compute_sim, compute_sim.assign(model="llama2-70b")], ignore_index=True)
    fig = plot(two, hardware=catalogue.hardware, models=catalogue.models)
    panels = [ax for ax in fig.axes if ax.get_xlabel()]
    assert len(panels) == 2
    left = [ax.get_ylabel() for ax in panels]
    right = [[child.get_ylabel() for child in ax.child_axes] for ax in panels]
    assert left == ["FLOPs per GPU per step (PFLOP)", ""]
    assert right == [[""], ["Time at H100 80GB peak (s)"]]
    plt.close(fig)


@pytest.mark.parametrize("name", ["context_length", "hardware_generations", "power_efficiency"])
def test_gpu_and_length_ticks_are_turned_90_degrees(name, context_sim, hardware_sim, catalogue):
    import importlib

    module = importlib.import_module(f"trainscale.figures.{name}")
    if name == "context_length":
        fig = module.plot(context_sim, models=catalogue.models)
    elif name == "hardware_generations":
        fig = module.plot(hardware_sim, hardware=catalogue.hardware, models=catalogue.models)
    else:
        fig = module.plot(hardware_sim, models=catalogue.models)
    for ax in (ax for ax in fig.axes if ax.get_xlabel()):
        for tick in ax.get_xticklabels():
            if tick.get_text():
                assert tick.get_rotation() == 90.0
    plt.close(fig)


def test_legend_names_are_cut_at_a_word_boundary() -> None:
    from trainscale.figures._text import shorten

    text = "Fernandez et al. 2024, Hardware Scaling Trends and Diminishing Returns"
    assert shorten(text, 60) == "Fernandez et al. 2024, Hardware Scaling Trends and…"
    assert shorten(text, 200) == text
    assert shorten("Supercalifragilistic", 6) == "Super…"
    for width in range(11, len(text)):  # from the first word's length on
        cut = shorten(text, width)
        assert len(cut) <= width and text.startswith(cut[:-1].rstrip(" ,"))
        assert text[len(cut) - 1] in " ,"  # the next character ends a word


def test_collective_points_are_coloured_by_their_node_count_like_the_curves() -> None:
    from trainscale.figures.collective_bandwidth import node_colors

    colours = node_colors([1, 2, 4, 8, 512, 1024, 4096])
    assert len(set(colours.values())) == 6  # 4,096 nodes drawn as the largest (1,024)
    assert colours[1024] == colours[4096]
    # a sequential scale: lightness grows with the node count
    lightness = [sum(colours[n][:3]) for n in (1, 2, 4, 8, 512, 1024)]
    assert lightness == sorted(lightness)


def test_a_power_cap_study_can_plot_energy_per_token_and_memory(catalogue) -> None:
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import METRICS, ReportSpec, select_rows

    sim = simulate(model=["llama2-7b"], num_gpus=[64, 256], power_limit_w=[500, 700])
    spec = ReportSpec(x="power_limit_w", series=("num_gpus",), facet=None, best_of=(),
                      metrics=("energy_j_per_token", "mem_gib_per_gpu"),
                      levels={"num_gpus": (64, 256)})  # fmt: skip
    fig = plot_scaling(select_rows(sim, spec), spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    labels = {ax.get_ylabel() for ax in fig.axes}
    assert {METRICS["energy_j_per_token"][0], METRICS["mem_gib_per_gpu"][0]} <= labels
    plt.close(fig)


def test_the_study_schema_offers_exactly_the_plottable_metrics() -> None:
    import yaml

    from trainscale.paths import schema_file
    from trainscale.study.report import METRICS

    schema = yaml.safe_load(schema_file("study").read_text())
    enum = schema["properties"]["report"]["properties"]["metrics"]["items"]["enum"]
    assert enum == list(METRICS)


def test_study_figure_labels_where_the_winning_plan_changes(catalogue) -> None:
    import itertools

    from trainscale import predict
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import ReportSpec, plan_switches, select_rows

    # Llama-2 70B, FSDP on H100: tp 2 with micro-batch 1 wins at 256 and 1,024 GPUs, tp 4 with
    # micro-batch 2 at 2,048 (tests/workflow/test_workflow_points.py runs the same as a study)
    sim = predict(pd.DataFrame([
        {"model": "llama2-70b", "gpu": "h100-sxm-80gb", "num_gpus": n, "tp": tp, "pp": 1,
         "sharding": "fsdp", "micro_batch": mb, "recompute": "none", "seq_len": 4096,
         "global_batch": 2048, "precision": "bf16"}
        for n, tp, mb in itertools.product([256, 1024, 2048], [2, 4], [1, 2])
    ]))  # fmt: skip
    spec = ReportSpec(x="num_gpus", series=("model",), facet=None, best_of=("tp", "micro_batch"),
                      metrics=("tokens_per_s_per_gpu", "power_w_per_gpu"),
                      levels={"model": ("llama2-70b",)})  # fmt: skip
    rows = select_rows(sim, spec)
    switches = plan_switches(rows, spec)
    assert list(rows["tp"]) == [2, 2, 4]
    expected = ["", "", "tp 4, micro-batch 2"]
    assert list(switches) == expected
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    first = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens/s per GPU")
    assert [t.get_text() for t in first.texts] == ["1"]  # the ring's number; its text below
    note = " ".join(" ".join(t.get_text() for t in fig.texts).split())
    assert "1 llama2-70b at 2,048 GPUs: tp 4, micro-batch 2" in note
    power = next(ax for ax in fig.axes if ax.get_ylabel() == "Power per GPU (W)")
    assert power.get_ylim()[0] == 0.0
    assert "points.csv" in " ".join(t.get_text() for t in fig.texts)
    plt.close(fig)


def test_study_legends_read_as_words_not_column_names(catalogue) -> None:
    from trainscale.names import Names
    from trainscale.study.report import series_label

    names = Names.of(catalogue.hardware, catalogue.models)

    assert series_label(["num_gpus", "framework"], [64, "pytorch"]) == "64 GPUs, pytorch"
    assert series_label(["power_limit_w", "tp"], [500.0, 2]) == "500 W cap, tp 2"
    assert series_label(["model", "gpu"], ["llama2-7b", "h100-sxm-80gb"], names) == (
        "Llama-2 7B, H100 80GB"
    )
    # without the catalogues' names, the keys
    assert series_label(["model"], ["llama2-7b"]) == "llama2-7b"


def test_a_power_limit_axis_is_linear_and_ticked_at_the_study_values(catalogue) -> None:
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import ReportSpec, select_rows

    sim = simulate(model=["llama2-7b"], num_gpus=[64], power_limit_w=[400, 550, 700])
    spec = ReportSpec(x="power_limit_w", series=(), facet=None, best_of=(),
                      metrics=("tokens_per_s_per_gpu",), levels={})  # fmt: skip
    fig = plot_scaling(select_rows(sim, spec), spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    axis = next(ax for ax in fig.axes if ax.get_xlabel())
    assert axis.get_xscale() == "linear"
    assert [t.get_text() for t in axis.get_xticklabels()] == ["400", "550", "700"]
    plt.close(fig)
