"""Every figure: renders from small inputs, labels its axes with units, names every series in its
legend, says where its numbers come from, and gives byte-identical files on a second render, in
the same process or in another one."""

from __future__ import annotations

import functools
import importlib
import os
import re
import subprocess
import sys
import textwrap

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from trainscale.figures import FIGURES
from trainscale.report import style

#: figure → (fixture per input, axis labels it must have, legend entries it must have,
#: source-note fragments it must have).
SPECS = {
    "collective_bandwidth": (
        {
            "curves": "collective_curves_table",
            "validation": "collective_validation",
            "published": "published_collectives",
        },
        {"Message size (bytes)", "Bus bandwidth (GB/s)"},
        {"1 node (8 GPUs)", "512 nodes (4096 GPUs)", "nccl source"},
        {"Simulated: trainscale", "Published: nccl source", "sendrecv"},
    ),
    "collective_scaling": (
        {"curves": "collective_curves_table"},
        {"GPUs (count)", "Time per layer (ms)"},
        {"AllGather = ReduceScatter (equal in the model)", "AllReduce", "AllGather latency term"},
        {"Simulated: trainscale", "collective cost model"},
    ),
    "fsdp_scaleout": (
        {"sim": "scaleout_sim"},
        {
            "GPUs (count)",
            "Global throughput (tokens/s)",
            "Throughput per GPU (tokens/s)",
            "MFU (%)",
            "Power per GPU (W)",
            "Communication per step, busy (s)",
            "Exposed communication (% of step)",
        },
        {"Llama-2 7B", "Llama-2 70B", "AllGather (busy)", "paper's drop"},
        {"Simulated: trainscale", "calibration"},
    ),
    "model_parallel": (
        {"sim": "model_parallel_sim"},
        {"Model-parallel degree tp·pp (GPUs per replica)", "Throughput (million tokens/s)"},
        {
            "TP only (pp = 1)",
            "PP only (tp = 1)",
            "TP × PP (both > 1)",
            "pure FSDP (tp·pp = 1)",
            "best plan",
        },
        {"Simulated: trainscale"},
    ),
    "hardware_generations": (
        {"sim": "hardware_sim"},
        {"GPUs (count)", "MFU (%)", "Throughput per GPU (tokens/s)", "Exposed comm. (% of step)"},
        {"A100 80GB", "H100 80GB", "B200"},
        {"Simulated: trainscale", "default system"},
    ),
    "power_efficiency": (
        {"sim": "scaleout_sim"},
        {"GPUs (count)", "Tokens per joule (tokens/J)", "Tokens/J (% of the model's best)"},
        {"Llama-2 7B", "Llama-2 70B", "open: full recomputation (needed to fit, or faster)"},
        {"Simulated: trainscale"},
    ),
    "context_length": (
        {"sim": "context_sim"},
        {"Sequence length (tokens)", "Throughput per GPU (tokens/s)", "MFU (%)"},
        {"Llama-2 7B"},
        {"Simulated: trainscale", "8,388,608 tokens per batch"},
    ),
    "compute_per_gpu": (
        {"sim": "compute_sim"},
        {"Data-parallel degree dp (replicas)", "FLOPs per GPU per step (PFLOP)"},
        {"tp·pp = 1", "tp·pp = 2", "tp·pp = 4"},
        {"Simulated: trainscale"},
    ),
    "marginal_returns": (
        {"sim": "scaleout_sim"},
        {
            "GPUs (count)",
            "Marginal throughput\n(tokens/s per added GPU)",
            "Marginal throughput\n(tokens/s per added kW)",
        },
        {
            "between consecutive GPU counts (data)",
            "USL fit: dX/dN",
            "95 % band of the fit (delta method)",
        },
        {"Simulated: trainscale"},
    ),
    "sim_vs_published": (
        {"holdout": "holdout_rows", "validation": "validation_rows"},
        {
            "GPUs in the job (count)",
            "Published throughput per GPU (tokens/s)",
            "Held-out error of tokens/s per GPU (%):\npredicted / published − 1",
        },
        {"A (2): 20.0 %", "B (1): 60.0 %"},
        {
            "held out: one refit per source",
            "In sample: the shipped calibration cal123",
            "MAPE 23.3 % over 3 rows",
            "Published: 2 sources",
        },
    ),
    "global_batch_inference": (
        {"sim": "batch_sim"},
        {
            "Assumed global batch (sequences per step)",
            "Drop of tokens/s per GPU,\n128 → 2,048 GPUs (%)",
        },
        {
            "simulated, sequences of 2,048 tokens",
            "simulated, sequences of 4,096 tokens",
            "paper: 37.22 % drop",
            "paper ± 5 points",
        },
        {"Simulated: trainscale"},
    ),
    "best_plan": (
        {"sim": "best_sim"},
        {"GPUs (count)", "Model", "MFU of the best plan (%)"},
        set(),
        {"Simulated: trainscale", "+R = full recomputation"},
    ),
    "sim_vs_measured": (
        {"table": "sim_vs_measured_table"},
        {"Step time (s)", "Throughput per GPU (tokens/s)"},
        {
            "measured (steady-state median)",
            "simulated, same configuration",
            "measured, no prediction (e.g. CPU run; reason below)",
        },
        {"Measured: runs cpu_run, gpu_run", "Simulated: trainscale", "No prediction for cpu_run"},
    ),
}


def _inputs(name, request):
    """The figure's inputs from their fixtures, and the shipped catalogues it takes."""
    inputs = {key: request.getfixturevalue(fixture) for key, fixture in SPECS[name][0].items()}
    catalogue = request.getfixturevalue("catalogue")
    return inputs | {key: getattr(catalogue, key) for key in FIGURES[name].catalogues}


def _texts(fig: Figure) -> tuple[set[str], set[str], str]:
    labels = set()
    for ax in fig.axes:
        labels |= {ax.get_xlabel(), ax.get_ylabel()}
    legend = {t.get_text() for leg in fig.findobj(Legend) for t in leg.get_texts()}
    notes = "\n".join(t.get_text() for t in fig.texts)
    return labels - {""}, legend, " ".join(notes.split())


def test_every_figure_has_a_spec():
    assert set(SPECS) == set(FIGURES)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_figure_labels_legend_and_source(name, request):
    module = importlib.import_module(f"trainscale.figures.{name}")
    fig = module.plot(**_inputs(name, request))
    assert isinstance(fig, Figure)
    labels, legend, notes = _texts(fig)
    _, want_labels, want_legend, want_notes = SPECS[name]
    assert want_labels <= labels, labels
    assert want_legend <= legend, legend
    for fragment in want_notes:
        assert fragment in notes, notes
    for label in labels - {"Model"}:  # every quantity axis names its unit
        assert re.search(r"\(.+\)", label), label
    plt.close(fig)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_figure_files_are_byte_identical_across_renders(name, request, tmp_path, monkeypatch):
    """Two renders in this process (see test_svg_is_byte_identical_across_processes for two
    processes and every format). The second render writes the PDF only, the format written
    first: each later format is a full draw again, whose constrained layout starts from the
    one solved for the format before it, so a PDF written alone is the first render's PDF, and
    any change in the figure's content (every path, text and artist, in drawing order) shows in
    it."""
    module = importlib.import_module(f"trainscale.figures.{name}")
    inputs = _inputs(name, request)
    first = module.render(tmp_path / "a" / name, **inputs)
    assert [p.suffix for p in first] == [".pdf", ".png", ".svg"]
    assert first[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # save_styled looks save_figure up when it saves
    monkeypatch.setattr(
        style, "save_figure", functools.partial(style.save_figure, formats=("pdf",))
    )
    (second,) = module.render(tmp_path / "b" / name, **inputs)
    assert second.suffix == ".pdf"
    assert second.read_bytes() == first[0].read_bytes()


# A study's scaling figure (reports/studies/<study>/scaling), drawn in a fresh process: the
# fsdp_scaleout study's layout (a row of five metric panels per recompute mode, the legend row),
# from the small scale-out. Matplotlib's constrained layout solves with kiwisolver, which orders
# each constraint's terms by the memory address of its variables, so that where this process's
# allocator happens to put them decides the last bits of every Axes position. ``shuffle`` hands
# the layout its variables in a shuffled address order: another process's heap, on demand.
_RENDER_SCALING = textwrap.dedent(
    """
    import random
    import sys

    import kiwisolver
    import matplotlib
    import pandas as pd

    matplotlib.use("Agg")

    from trainscale.figures.study_scaling import render_scaling
    from trainscale.report import apply_style
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    parquet, stem, shuffle = sys.argv[1], sys.argv[2], int(sys.argv[3])
    apply_style()
    catalogue = load_catalogue()
    spec = ReportSpec(
        x="num_gpus",
        series=("model",),
        facet="recompute",
        best_of=(),
        metrics=DEFAULT_METRICS,
        levels={"model": ("llama2-7b", "llama2-70b"), "recompute": ("none", "full")},
    )
    rows = select_rows(pd.read_parquet(parquet), spec)
    if shuffle:
        pool = [kiwisolver.Variable() for _ in range(20_000)]
        random.Random(shuffle).shuffle(pool)

        def variable(name=""):
            chosen = pool.pop()
            chosen.setName(name)
            return chosen

        kiwisolver.Variable = variable
    render_scaling(
        stem,
        rows,
        spec,
        note="The study's setup.",
        hardware=catalogue.hardware,
        models=catalogue.models,
        title="Study fsdp_scaleout: scaling",
    )
    """
)


def test_svg_is_byte_identical_across_processes(scaleout_sim, tmp_path):
    """Two fresh processes, different hash seeds and heaps, give the same bytes, SVG included
    (its clip-path ids hash the clip rectangles' full-precision coordinates)."""
    parquet = tmp_path / "sim.parquet"
    scaleout_sim.to_parquet(parquet)
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _RENDER_SCALING, str(parquet), str(tmp_path / name), shuffle],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, seed, shuffle in (("a", "0", "0"), ("b", "1", "1"))
    ]
    for run in runs:
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
    formats = (".pdf", ".png", ".svg")
    differ = [
        s for s in formats if (tmp_path / f"a{s}").read_bytes() != (tmp_path / f"b{s}").read_bytes()
    ]
    assert differ == []
