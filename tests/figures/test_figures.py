"""Every figure: renders from small inputs, labels its axes with units, names every series in its
legend, says where its numbers come from, and gives byte-identical files on a second render, in
the same process or in another one."""

from __future__ import annotations

import functools
import importlib
import re

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
            "USL fit: dX/dN (up to a cliff)",
            "95 % band of the fit (delta method, cut at 0)",
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
    "dense_vs_moe": (
        {"sim": "moe_sim"},
        {
            "GPUs (count)",
            "Throughput per GPU (tokens/s)",
            "MFU (%)",
            "Exposed communication (% of step)",
        },
        {"Llama-3 70B", "Qwen3 30B-A3B", "exposed all-to-all (expert parallel)"},
        {"Simulated: trainscale", "the winning expert-parallel degree"},
    ),
    "energy_bill": (
        {"energy": "energy_bill_table"},
        {"GPUs (count)", "Tokens per joule, node (tokens/J)", "Cost per million tokens (USD)"},
        {
            "Llama-2 7B, FSDP, H100, paper setup (simulated, 80 % band)",
            "open: simulated prediction of the metered run",
        },
        {"Node scope: the GPUs plus the host", "Metered: MLPerf Training", "2.5 USD per GPU-hour"},
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
    """Two renders in this process, each writing the PDF only (see
    test_svg_is_byte_identical_across_processes for two processes and every format, and
    test_render_writes_pdf_png_and_svg for what ``render`` writes): a PDF written alone is the
    first render's PDF (each later format is a full draw again, whose constrained layout starts
    from the one solved for the format before it), and any change in the figure's content
    (every path, text and artist, in drawing order) shows in it."""
    module = importlib.import_module(f"trainscale.figures.{name}")
    inputs = _inputs(name, request)
    # save_styled looks save_figure up when it saves
    monkeypatch.setattr(
        style, "save_figure", functools.partial(style.save_figure, formats=("pdf",))
    )
    (first,) = module.render(tmp_path / "a" / name, **inputs)
    (second,) = module.render(tmp_path / "b" / name, **inputs)
    assert first.suffix == second.suffix == ".pdf"
    assert second.read_bytes() == first.read_bytes()


def test_render_writes_pdf_png_and_svg(request, tmp_path):
    """A figure module's ``render`` (the one :func:`trainscale.figures._render.styled_render`
    of every figure) writes the PDF, a PNG and the SVG, in that order; the workflow's figure
    rule writes all three for every figure."""
    module = importlib.import_module("trainscale.figures.collective_scaling")
    paths = module.render(tmp_path / "collective_scaling", **_inputs("collective_scaling", request))
    assert [p.suffix for p in paths] == [".pdf", ".png", ".svg"]
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[2].read_text().lstrip().startswith("<?xml")
    assert all(p.stat().st_size > 0 for p in paths)
    for name in FIGURES:  # the same render, so the same files, for every figure
        other = importlib.import_module(f"trainscale.figures.{name}").render
        assert other.__code__ is module.render.__code__, name


def test_svg_is_byte_identical_across_processes(scaling_renders) -> None:
    """Two fresh processes, different hash seeds and heaps, give the same bytes, SVG included
    (its clip-path ids hash the clip rectangles' full-precision coordinates); the renders run
    once per session (conftest.py, :func:`_scaling_renders`)."""
    for done, _ in scaling_renders:
        assert done.returncode == 0, done.stderr
    (_, a), (_, b) = scaling_renders
    formats = (".pdf", ".png", ".svg")
    differ = [s for s in formats if a.with_suffix(s).read_bytes() != b.with_suffix(s).read_bytes()]
    assert differ == []
