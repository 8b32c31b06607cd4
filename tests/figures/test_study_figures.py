"""Tests of the helpers behind the paper-setup figures (drops, plan kinds, labels, FLOPs)."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.figures.best_plan import cell_label
from trainscale.figures.compute_per_gpu import flops_per_gpu_step
from trainscale.figures.fsdp_scaleout import drop_pct, plot
from trainscale.figures.global_batch_inference import drop_by_batch
from trainscale.figures.model_parallel import plan_kind
from trainscale.names import Names
from trainscale.sim.model.flops import model_flops_per_token
from trainscale.sim.model.params import TransformerShape


def test_drop_pct_between_128_and_2048_gpus():
    series = pd.DataFrame({"num_gpus": [8, 128, 2048], "x": [1.0, 100.0, 62.78]})
    assert drop_pct(series, "x") == pytest.approx(37.22)
    assert drop_pct(series.iloc[:2], "x") is None


def test_fsdp_scaleout_marks_the_simulated_and_the_paper_drops(scaleout_sim, catalogue):
    fig = plot(scaleout_sim, models=catalogue.models)
    text = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    seven = scaleout_sim[(scaleout_sim["model"] == "llama2-7b") & scaleout_sim["fits_memory"]]
    seven = seven.loc[seven.groupby("num_gpus")["tokens_per_s"].idxmax()]
    assert f"simulated −{drop_pct(seven, 'tokens_per_s_per_gpu'):.2f} %" in text
    assert "paper −37.22 %" in text and "paper −5.87 %" in text


def test_drop_by_batch_from_fabricated_throughputs():
    sim = pd.DataFrame(
        {
            "seq_len": [4096] * 4,
            "global_batch": [2048, 2048, 4096, 4096],
            "num_gpus": [128, 2048, 128, 2048],
            "tokens_per_s_per_gpu": [100.0, 60.0, 100.0, 80.0],
            "fits_memory": [True, True, True, True],
            "dp": [128, 2048, 128, 2048],
            "micro_batch": [2, 1, 2, 2],
        }
    )
    drops = drop_by_batch(sim)
    assert drops["drop_pct"].tolist() == pytest.approx([40.0, 20.0])
    assert drops["global_batch_tokens"].tolist() == [2048 * 4096, 4096 * 4096]


def test_drop_by_batch_keeps_the_study_micro_batch_only():
    sim = pd.DataFrame(
        {
            "seq_len": [4096] * 3,
            "global_batch": [2048] * 3,
            "num_gpus": [128, 128, 2048],
            "tokens_per_s_per_gpu": [100.0, 90.0, 50.0],
            "fits_memory": [True] * 3,
            "dp": [128, 128, 2048],
            "micro_batch": [2, 1, 1],  # at 128 GPUs the paper setup uses 2
        }
    )
    assert drop_by_batch(sim)["drop_pct"].tolist() == pytest.approx([50.0])


def test_drop_by_batch_leaves_out_batches_missing_a_count():
    sim = pd.DataFrame(
        {
            "seq_len": [4096],
            "global_batch": [2048],
            "num_gpus": [128],
            "tokens_per_s_per_gpu": [1.0],
            "fits_memory": [True],
            "dp": [128],
            "micro_batch": [2],
        }
    )
    assert drop_by_batch(sim).empty


def test_plan_kind():
    tp = pd.Series([1, 2, 1, 2])
    pp = pd.Series([1, 1, 4, 2])
    assert plan_kind(tp, pp).tolist() == ["fsdp", "tp", "pp", "mixed"]


def test_cell_label_marks_recomputation():
    row = pd.Series({"tp": 2, "pp": 4, "sharding": "zero1", "recompute": "full"})
    assert cell_label(row) == "tp2×pp4\nzero1+R"
    assert cell_label(row.replace("full", "none")) == "tp2×pp4\nzero1"


def test_flops_per_gpu_step_is_model_flops_times_tokens_over_gpus(compute_sim, catalogue):
    rows = compute_sim
    shape = TransformerShape(rows["layers"], rows["hidden"], rows["heads"], rows["kv_heads"],
                             rows["ffn"], rows["vocab"], rows["mlp"] == "swiglu")  # fmt: skip
    per_token = model_flops_per_token(shape, rows["seq_len"])
    expected = per_token * rows["global_batch"] * rows["seq_len"] / rows["num_gpus"]
    assert flops_per_gpu_step(rows, catalogue.hardware).to_numpy() == pytest.approx(
        expected.to_numpy(), rel=1e-9
    )


def test_fsdp_scaleout_draws_the_interval_from_the_table_as_a_band(scaleout_sim, catalogue):
    from matplotlib.collections import PolyCollection

    def bands(sim):
        fig = plot(sim, models=catalogue.models)
        return [c for ax in fig.axes for c in ax.collections if isinstance(c, PolyCollection)]

    drawn = bands(scaleout_sim)
    assert len(drawn) == scaleout_sim["model"].nunique()
    # the band's top edge is the table's own upper bound (plots take data, they compute nothing)
    top = max(float(p.get_paths()[0].vertices[:, 1].max()) for p in drawn)
    assert top == pytest.approx(float(scaleout_sim["tokens_per_s_per_gpu_hi"].max()))
    # a table without the interval columns draws no band
    assert bands(scaleout_sim.drop(columns=["tokens_per_s_per_gpu_lo"])) == []


def test_model_parallel_rates_start_at_zero_and_label_only_the_mixed_plans(
    model_parallel_sim, catalogue
):
    import matplotlib.pyplot as plt

    from trainscale.figures.model_parallel import plot as plot_model_parallel

    fig = plot_model_parallel(model_parallel_sim, models=catalogue.models)
    panels = [ax for ax in fig.axes if ax.get_ylabel()]
    assert panels
    for ax in panels:
        assert ax.get_ylim()[0] == 0.0
        for label in ax.texts:
            if "×" in label.get_text():  # beside the marker, not above or below it
                assert label.get_ha() in ("left", "right")
    plt.close(fig)


def test_fsdp_scaleout_power_axis_from_zero_and_micro_batch_switch_marked(scaleout_sim, catalogue):
    import matplotlib.pyplot as plt

    from trainscale.figures._marks import micro_batch_switch

    frame = pd.DataFrame({"num_gpus": [128, 1024, 2048], "micro_batch": [2, 2, 1]})
    assert micro_batch_switch(frame) == 2048
    assert micro_batch_switch(frame.assign(micro_batch=2)) is None
    fig = plot(scaleout_sim, models=catalogue.models)
    power = next(ax for ax in fig.axes if ax.get_ylabel() == "Power per GPU (W)")
    assert power.get_ylim()[0] == 0.0
    plt.close(fig)


def test_best_plan_colour_bar_fits_the_data_and_dp1_is_short():
    import numpy as np

    from trainscale.figures.best_plan import mfu_range
    from trainscale.report.best_plans import NO_DATA_PARALLEL

    assert mfu_range(np.array([27.3, 44.9, np.nan])) == (25.0, 45.0)
    assert mfu_range(np.array([np.nan])) == (0.0, 60.0)
    row = pd.Series({"tp": 2, "pp": 8, "sharding": NO_DATA_PARALLEL, "recompute": "full"})
    assert cell_label(row) == "tp2×pp8\ndp 1+R"


def test_missing_points_are_named_with_their_reason(catalogue):
    from trainscale.figures.context_length import missing_lengths
    from trainscale.figures.global_batch_inference import missing_batches

    # 70B at 32,768 tokens: only micro-batch 1 (off the study's rule) fits
    sim = pd.DataFrame(
        {"model": ["llama2-70b"] * 2, "num_gpus": [128, 128], "seq_len": [16384, 32768],
         "micro_batch": [2, 1], "recompute": ["full", "full"], "fits_memory": [True, True]}
    )  # fmt: skip
    shown = sim.iloc[:1]
    (note,) = missing_lengths(sim, shown, [16384, 32768], catalogue.models)
    assert "Llama-2 70B (128 GPUs) at 32,768 tokens" in note
    assert "only micro-batch 1 with full recomputation fits" in note
    assert missing_lengths(sim, sim, [16384, 32768], catalogue.models) == []

    # 6,144 sequences at 2,048 GPUs: local batch 3 does not split into micro-batches of 2
    rows = pd.DataFrame(
        {"seq_len": 4096, "global_batch": 6144, "num_gpus": [128, 128, 2048],
         "dp": [128, 128, 2048], "micro_batch": [1, 2, 1], "fits_memory": True,
         "tokens_per_s_per_gpu": [1.0, 1.0, 1.0]}
    )  # fmt: skip
    (why,) = missing_batches(rows, pd.DataFrame({"seq_len": [], "global_batch": []}))
    assert why.startswith("6,144 sequences of 4,096 tokens: at 2,048 GPUs the local batch of 3")


def test_study_series_keep_apart_by_marker_where_their_values_coincide(scaleout_sim, catalogue):
    from trainscale.figures.study_scaling import SERIES_MARKERS, plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    # Two series with the very same numbers (two stacks that predict the same throughput): the
    # second line lies on the first, so only the marker shape tells them apart.
    one = scaleout_sim[scaleout_sim["model"] == "llama2-7b"]
    twin = one.assign(model="llama2-70b")
    spec = ReportSpec(
        names=Names.of(catalogue.hardware, catalogue.models),
        x="num_gpus", series=("model",), facet="recompute", best_of=(), metrics=DEFAULT_METRICS,
        levels={"model": ("llama2-7b", "llama2-70b"), "recompute": ("none", "full")},
    )  # fmt: skip
    rows = select_rows(pd.concat([one, twin], ignore_index=True), spec)
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip

    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)
    shapes = {t.get_text().split(":")[0]: h.get_marker()
              for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
              if t.get_text().startswith("Llama-2")}  # fmt: skip
    assert list(shapes.values()) == list(SERIES_MARKERS[:2])
    # and the panels draw each series with its own shape
    from matplotlib.collections import PathCollection

    panel = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens/s per GPU")
    drawn = {tuple(map(tuple, c.get_paths()[0].vertices.round(3)))
             for c in panel.collections if isinstance(c, PathCollection)}  # fmt: skip
    assert len(drawn) == 2


def test_study_global_throughput_band_is_per_gpu_band_times_gpus_whatever_the_x_axis(catalogue):
    from matplotlib.collections import PolyCollection

    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    from .conftest import simulate

    # x is the sequence length (the context_length study): the band must not scale with it
    sim = simulate(model=["llama2-7b"], seq_len=[1024, 4096, 16384], num_gpus=[128])
    names = Names.of(catalogue.hardware, catalogue.models)
    spec = ReportSpec(names=names, x="seq_len", series=("model",), facet=None, best_of=(),
                      metrics=DEFAULT_METRICS, levels={"model": ("llama2-7b",)})  # fmt: skip
    rows = select_rows(sim, spec)
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    panel = next(ax for ax in fig.axes if ax.get_ylabel() == "Global tokens/s")
    (band,) = [c for c in panel.collections if isinstance(c, PolyCollection)]
    top = float(band.get_paths()[0].vertices[:, 1].max())
    expected = float((sim["tokens_per_s_per_gpu_hi"] * sim["num_gpus"]).max())
    assert top == pytest.approx(expected)
    assert float(sim["tokens_per_s"].max()) < top < 2 * float(sim["tokens_per_s"].max())


def test_study_legend_names_what_doubles_when_x_is_not_the_gpu_count(catalogue):
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    from .conftest import simulate

    sim = simulate(model=["llama2-7b"], seq_len=[1024, 4096, 16384], num_gpus=[128])
    names = Names.of(catalogue.hardware, catalogue.models)
    spec = ReportSpec(names=names, x="seq_len", series=("model",), facet=None, best_of=(),
                      metrics=DEFAULT_METRICS, levels={"model": ("llama2-7b",)})  # fmt: skip
    fits = pd.DataFrame({"series": ["Llama-2 7B"], "metric": ["tokens_per_s_per_gpu"],
                         "fit": ["loglog_hc3"], "parameter": ["pct_per_doubling"],
                         "estimate": [-12.5]})  # fmt: skip
    fig = plot_scaling(select_rows(sim, spec), spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models, fits=fits)  # fmt: skip
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)
    texts = [t.get_text() for t in legend.get_texts()]
    assert "Llama-2 7B: -12.5 % tokens/s per GPU per doubling of the sequence length" in texts


@pytest.mark.parametrize(
    ("model", "recompute", "best_of", "expected"),
    [
        ("llama2-7b", ["selective"], (), "open: selective recomputation"),
        # 70B fits on these GPUs only with full recomputation, which is then the fastest kept
        ("llama2-70b", ["none", "full"], ("recompute",),
         "open: full recomputation (needed to fit, or faster)"),
    ],
)  # fmt: skip
def test_study_legend_says_which_recomputation_the_open_markers_use(
    catalogue, model, recompute, best_of, expected
):
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    from .conftest import simulate

    sim = simulate(model=[model], recompute=recompute, num_gpus=[64, 256])
    names = Names.of(catalogue.hardware, catalogue.models)
    spec = ReportSpec(names=names, x="num_gpus", series=("model",), facet=None, best_of=best_of,
                      metrics=DEFAULT_METRICS, levels={"model": (model,)})  # fmt: skip
    fig = plot_scaling(select_rows(sim, spec), spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)
    texts = [t.get_text() for t in legend.get_texts() if t.get_text().startswith("open")]
    assert texts == [expected]


def test_study_legend_too_wide_for_a_panel_cell_gets_its_own_row(catalogue):
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    from .conftest import simulate

    sim = simulate(model=["llama2-7b"], seq_len=[1024, 4096, 16384], num_gpus=[128])
    names = Names.of(catalogue.hardware, catalogue.models)
    spec = ReportSpec(names=names, x="seq_len", series=("model",), facet=None, best_of=(),
                      metrics=DEFAULT_METRICS, levels={"model": ("llama2-7b",)})  # fmt: skip

    def legend_width(estimate: float | None) -> float:
        fits = None if estimate is None else pd.DataFrame(
            {"series": ["Llama-2 7B"], "metric": ["tokens_per_s_per_gpu"], "fit": ["loglog_hc3"],
             "parameter": ["pct_per_doubling"], "estimate": [estimate]}
        )  # fmt: skip
        fig = plot_scaling(select_rows(sim, spec), spec, note="setup", fits=fits,
                           hardware=catalogue.hardware, models=catalogue.models)  # fmt: skip
        holder = next(ax for ax in fig.axes if ax.get_legend() is not None)
        return holder.get_position().width

    # a short label sits in the free panel cell (a third of the width), a long one in a row
    assert legend_width(None) < 0.4
    assert legend_width(-12.5) > 0.7


def test_log_axis_over_less_than_a_factor_four_gets_more_than_one_label():
    import matplotlib.pyplot as plt

    from trainscale.figures._common import readable_log

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [7e5, 1.0e6, 1.5e6])
    readable_log(ax)
    fig.canvas.draw()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticks() if low <= t <= high]
    assert len(shown) >= 4  # 700k, 800k, 900k, 1M (1, 2, 5 per decade would show 1M alone)


def test_a_small_log_axis_over_many_decades_keeps_its_labels():
    """A study's small first panel spanning four decades (global tokens/s of 1B to 70B models):
    matplotlib's thinning of ticks at 1, 2 and 5 per decade left it with none; it gets decades."""
    import matplotlib.pyplot as plt

    from trainscale.figures._common import readable_log

    fig, ax = plt.subplots(figsize=(1.6, 1.3))
    ax.plot([1, 2], [1e5, 1e8])
    readable_log(ax)
    fig.canvas.draw()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticks() if low <= t <= high]
    assert shown == [1e5, 1e6, 1e7, 1e8]


def test_interval_at_a_single_x_value_is_drawn_as_a_bar(catalogue):
    from matplotlib.collections import LineCollection

    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    from .conftest import simulate

    # a study that sweeps only the stack: one point per series, where a band has no width
    sim = simulate(model=["llama2-7b"], num_gpus=[64])
    names = Names.of(catalogue.hardware, catalogue.models)
    spec = ReportSpec(names=names, x="num_gpus", series=("model",), facet=None, best_of=(),
                      metrics=DEFAULT_METRICS, levels={"model": ("llama2-7b",)})  # fmt: skip
    fig = plot_scaling(select_rows(sim, spec), spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    panel = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens/s per GPU")
    (bar,) = [c for c in panel.collections if isinstance(c, LineCollection)]
    ends = bar.get_segments()[0][:, 1]
    assert sorted(ends) == pytest.approx(
        sorted(sim[["tokens_per_s_per_gpu_lo", "tokens_per_s_per_gpu_hi"]].iloc[0])
    )
