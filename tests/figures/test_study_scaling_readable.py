"""The per-study scaling figure (issue 25 item 4, user trial 3 item 15): overlapping interval
bands stay readable, and points the study asked for but could not plan are named."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection

from trainscale.figures.study_scaling import BAND_ALPHA, plot_scaling
from trainscale.names import Names
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

from .conftest import simulate

_SHIPPED = load_catalogue()
#: The shipped catalogues' labels, as report_spec gives a study's spec.
NAMES = Names.of(_SHIPPED.hardware, _SHIPPED.models)


def _spec(models: tuple[str, ...]) -> ReportSpec:
    return ReportSpec(x="num_gpus", series=("model",), facet=None, best_of=(),
                      metrics=DEFAULT_METRICS, levels={"model": models}, names=NAMES)  # fmt: skip


def _notes(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts).replace("\n", " ").replace("  ", " ")


def test_overlapping_bands_stay_apart_and_the_legend_says_what_a_band_is(catalogue):
    # two series whose intervals overlap (Llama-2 7B and Llama-3 8B on the same GPUs)
    sim = simulate(model=["llama2-7b", "llama3-8b"], num_gpus=[64, 256, 1024])
    spec = _spec(("llama2-7b", "llama3-8b"))
    rows = select_rows(sim, spec)
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    panel = next(ax for ax in fig.axes if ax.get_ylabel() == "Tokens/s per GPU")
    bands = [c for c in panel.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    assert all(band.get_alpha() == BAND_ALPHA <= 0.12 for band in bands)
    # each band is edged by dashed lines in its series' colour, at its interval's ends, and
    # drawn under the series' own line
    for (label, series), band in zip(rows.groupby("series_label", sort=False), bands, strict=True):
        color = band.get_facecolor()[0][:3]
        edges = [
            line for line in panel.get_lines()
            if line.get_linestyle() not in ("-", "None", "")
            and np.allclose(line.get_color()[:3] if not isinstance(line.get_color(), str)
                            else (0, 0, 0), color)
        ]  # fmt: skip
        ys = sorted(tuple(np.round(line.get_ydata(), 3)) for line in edges)
        expected = sorted(
            tuple(np.round(series[f"tokens_per_s_per_gpu_{end}"].to_numpy(float), 3))
            for end in ("lo", "hi")
        )
        assert ys == expected, label
        mains = [line for line in panel.get_lines() if line.get_linestyle() == "-"]
        assert all(band.get_zorder() < line.get_zorder() for line in mains)
    legend = next(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("80 % prediction interval of the series in its colour" in t for t in texts)


def test_points_that_no_plan_fits_are_named_in_the_note(catalogue):
    from trainscale.figures._study_text import unplanned_points

    # Llama-2 70B, FSDP with full recomputation: nothing fits on 8 H100s, 64 and 256 GPUs do
    sim = simulate(model=["llama2-70b"], num_gpus=[8, 64, 256], recompute=["full"])
    assert not sim.loc[sim["num_gpus"] == 8, "fits_memory"].any()
    spec = _spec(("llama2-70b",))
    rows = select_rows(sim, spec)
    assert 8 not in set(rows["num_gpus"])
    (missing,) = unplanned_points(sim, spec, catalogue.hardware)
    need = float(sim.loc[sim["num_gpus"] == 8, "mem_gib_per_gpu"].min())
    assert missing == (
        f"Llama-2 70B at 8 GPUs: no plan fits in memory (the smallest needs {need:,.1f} GiB "
        "per GPU; H100 80GB has 80 GiB)"
    )
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models, unplanned=[missing])  # fmt: skip
    assert f"Not plotted: {missing}." in _notes(fig)
    # a study where every point has a plan names none
    assert unplanned_points(sim[sim["num_gpus"] > 8], spec, catalogue.hardware) == []


def test_unplanned_points_keep_facet_and_series_apart(catalogue):
    from trainscale.figures._study_text import unplanned_points

    # facet recompute, series model: 70B fits on 8 GPUs with neither; on 64 only with full
    sim = simulate(model=["llama2-7b", "llama2-70b"], num_gpus=[8, 64], recompute=["none", "full"])
    levels = {"model": ("llama2-7b", "llama2-70b"), "recompute": ("none", "full")}
    spec = ReportSpec(x="num_gpus", series=("model",), facet="recompute", best_of=(),
                      metrics=DEFAULT_METRICS, levels=levels, names=NAMES)  # fmt: skip
    named = unplanned_points(sim, spec, catalogue.hardware)
    heads = sorted(n.split(":")[0] for n in named)
    assert heads == [
        "recompute full, Llama-2 70B at 8 GPUs",
        "recompute none, Llama-2 70B at 64 GPUs",
        "recompute none, Llama-2 70B at 8 GPUs",
    ]
    assert pd.Series(named).str.contains("no plan fits in memory").all()


def test_points_the_expansion_dropped_are_named_from_its_rejects(catalogue):
    from trainscale.figures._study_text import unplanned_points

    # a study with filters.fits_memory: the rows that do not fit never reach the results, the
    # expansion's rejects table (results/studies/<study>/rejects.parquet) holds them
    sim = simulate(model=["llama2-70b"], num_gpus=[64, 256], recompute=["full"])
    rejects = pd.DataFrame(
        {"model": ["llama2-70b"] * 3, "num_gpus": [8, 8, 4096], "gpu": "h100-sxm-80gb",
         "column": ["filters.fits_memory", "filters.max_model_parallel", "global_batch"],
         "reason": ["predicted 152.4 GiB per GPU does not fit in the usable memory of "
                    "h100-sxm-80gb (80 GiB)", "tp·pp·cp = 32 exceeds max_model_parallel 16",
                    "global_batch 2048 is not divisible by dp 4096"]}
    )  # fmt: skip
    named = unplanned_points(sim, _spec(("llama2-70b",)), catalogue.hardware, rejects)
    assert named == [
        "Llama-2 70B at 8 GPUs: no plan fits in memory (the smallest needs 152.4 GiB per GPU; "
        "H100 80GB has 80 GiB); the other plans dropped by filters.max_model_parallel",
        "Llama-2 70B at 4,096 GPUs: global_batch: global_batch 2048 is not divisible by dp 4096",
    ]


def test_plan_changes_are_numbered_on_the_panel_and_named_in_the_note(catalogue):
    """user-trial-3 item 1 (figs25 caveat): the first panel carries only a ring and a number
    where the winning plan changes; the note says, per number, the series, the x value and what
    changed (the text plan_switches gives)."""
    from trainscale.study.report import plan_switches

    sim = simulate(model=["llama2-70b", "llama2-13b"], num_gpus=[64, 256, 1024, 2048],
                   tp=[1, 2, 4, 8], pp=[1, 2, 4])  # fmt: skip
    spec = ReportSpec(x="num_gpus", series=("model",), facet=None, best_of=("tp", "pp"),
                      metrics=DEFAULT_METRICS, levels={"model": ("llama2-13b", "llama2-70b")},
                      names=NAMES)  # fmt: skip
    rows = select_rows(sim, spec)
    changes = plan_switches(rows, spec)
    assert (changes != "").sum() >= 2
    fig = plot_scaling(rows, spec, note="setup", hardware=catalogue.hardware,
                       models=catalogue.models)  # fmt: skip
    first = next(ax for ax in fig.axes if ax.get_ylabel() == "Global tokens/s")
    numbers = [t.get_text() for t in first.texts]
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)]
    assert len(numbers) == (changes != "").sum()
    notes = " ".join(_notes(fig).split())
    assert "Numbered rings in the first panel" in notes
    for number, (_, row) in zip(numbers, rows[changes != ""].iterrows(), strict=True):
        expected = (f"{number} {NAMES.label('model', row['model'])} at "
                    f"{int(row['num_gpus']):,} GPUs: {changes[row.name]}")  # fmt: skip
        assert expected in notes
