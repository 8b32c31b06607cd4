"""Tests of trainscale.report.style: theme, GPU axes and byte-identical figure files."""

from __future__ import annotations

import hashlib

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
import seaborn as sns

from trainscale.errors import TrainscaleError
from trainscale.report.style import (
    LAYOUT_DECIMALS,
    PNG_DPI,
    SnappedConstrainedLayout,
    apply_style,
    category_colors,
    log2_gpu_axis,
    save_figure,
    style_context,
)

COUNTS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def small_figure():
    """A figure with lines, markers, text, a legend and a filled band."""
    with style_context():
        fig, ax = plt.subplots()
        n = np.array(COUNTS, dtype=float)
        ax.plot(n, 1e3 * n**0.9, marker="o", label="a100")
        ax.plot(n, 8e2 * n**0.8, marker="s", label="h100")
        ax.fill_between(n, 7e2 * n**0.8, 9e2 * n**0.8, alpha=0.2)
        log2_gpu_axis(ax, COUNTS)
        ax.set(xlabel="GPUs", ylabel="tokens/s", title="throughput", yscale="log")
        ax.legend()
    return fig


def digests(paths):
    return {p.suffix: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The same small figure built and saved twice, into two folders: two path triples."""
    root = tmp_path_factory.mktemp("figures")
    paths = []
    for folder in ("one", "two"):
        fig = small_figure()
        paths.append(save_figure(fig, root / folder / "fig"))
        plt.close(fig)
    return paths


def test_same_figure_gives_identical_bytes_in_all_formats(saved, tmp_path):
    first, second = saved
    assert [p.name for p in first] == ["fig.pdf", "fig.png", "fig.svg"]
    assert digests(first) == digests(second)
    assert first[0].read_bytes().startswith(b"%PDF")
    assert first[1].read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in first[2].read_bytes()[:2000]
    # The check has teeth: a different figure gives different bytes in every format.
    fig = small_figure()
    fig.axes[0].set_title("other")
    other = digests(save_figure(fig, tmp_path / "fig"))
    assert all(other[suffix] != digest for suffix, digest in digests(first).items())


def test_metadata_carries_no_dates_or_versions(saved):
    pdf, png, svg = (p.read_bytes() for p in saved[0])
    for key in (b"/CreationDate", b"/ModDate", b"/Producer", b"/Creator"):
        assert key not in pdf
    assert b"<dc:date>" not in svg and b"<dc:creator>" not in svg
    assert b"Software" not in png
    assert mpl.__version__.encode() not in pdf + svg + png


def test_png_resolution_and_truetype_pdf_fonts(saved):
    pdf, png, _ = saved[0]
    width_in, height_in = small_figure().get_size_inches()
    data = png.read_bytes()
    # IHDR: width and height as big-endian uint32 at bytes 16-24.
    width_px = int.from_bytes(data[16:20], "big")
    height_px = int.from_bytes(data[20:24], "big")
    assert (width_px, height_px) == (round(width_in * PNG_DPI), round(height_in * PNG_DPI))
    pdf_bytes = pdf.read_bytes()
    assert b"/FontFile2" in pdf_bytes  # TrueType (pdf.fonttype 42)
    assert b"/Type3" not in pdf_bytes


def test_saving_snaps_the_constrained_layout_to_a_fixed_grid(tmp_path):
    """save_figure keeps the layout's settings and rounds every Axes corner it solves to
    LAYOUT_DECIMALS decimals of the figure, so no last-bit noise of the solver reaches a file."""
    with style_context():
        fig, axes = plt.subplots(2, 3, layout="constrained")
        for ax in axes.flat:
            ax.set(xlabel="GPUs (count)", ylabel="tokens/s")
        fig.get_layout_engine().set(rect=(0.0, 0.1, 1.0, 0.9))
        save_figure(fig, tmp_path / "fig", formats=("svg",))
    engine = fig.get_layout_engine()
    assert isinstance(engine, SnappedConstrainedLayout)
    assert engine.get()["rect"] == (0.0, 0.1, 1.0, 0.9)
    grid = 10.0**LAYOUT_DECIMALS
    for ax in fig.axes:
        corners = ax.get_position().get_points()
        assert np.array_equal(corners, np.round(corners * grid) / grid)
        assert ax.get_in_layout()
    plt.close(fig)


def test_failure_leaves_no_partial_output(tmp_path, monkeypatch):
    fig = small_figure()
    stem = tmp_path / "fig"
    save_figure(fig, stem)
    before = digests(sorted(tmp_path.iterdir()))
    fig.axes[0].set_title("changed")
    original = fig.savefig

    def savefig_failing_on_svg(fname, **kwargs):
        if kwargs["format"] == "svg":
            raise RuntimeError("disk full")
        return original(fname, **kwargs)

    monkeypatch.setattr(fig, "savefig", savefig_failing_on_svg)
    with pytest.raises(RuntimeError, match="disk full"):
        save_figure(fig, stem)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.pdf", "fig.png", "fig.svg"]
    assert digests(sorted(tmp_path.iterdir())) == before  # old outputs untouched, no temp files
    with pytest.raises(TrainscaleError, match="unknown format"):
        save_figure(fig, stem, formats=("jpg",))


def test_log2_gpu_axis_labels_are_the_counts():
    fig, ax = plt.subplots()
    ax.plot(COUNTS, range(len(COUNTS)))
    assert log2_gpu_axis(ax, COUNTS) is ax
    fig.canvas.draw()
    assert ax.get_xscale() == "log"
    assert ax.xaxis.get_transform().base == 2
    assert list(ax.get_xticks()) == COUNTS
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [str(c) for c in COUNTS]
    assert ax.get_xlim() == pytest.approx((8 / 2**0.25, 2048 * 2**0.25))
    assert ax.xaxis.get_minor_locator().tick_values(8, 2048) == []
    log2_gpu_axis(ax, [4, 12], axis="y")
    assert ax.get_yscale() == "log"
    assert [ax.yaxis.get_major_formatter()(v) for v in (4, 12, 1.5)] == ["4", "12", "1.5"]
    with pytest.raises(TrainscaleError, match="positive"):
        log2_gpu_axis(ax, [0, 8])


def test_apply_style_sets_the_one_theme():
    apply_style()
    colors = [c["color"] for c in mpl.rcParams["axes.prop_cycle"]]
    assert colors == list(sns.color_palette("colorblind"))
    assert mpl.rcParams["pdf.fonttype"] == 42
    assert mpl.rcParams["svg.hashsalt"] == "trainscale"
    assert mpl.rcParams["font.sans-serif"][0] == "DejaVu Sans"
    assert mpl.rcParams["savefig.dpi"] == PNG_DPI


def test_style_context_restores_rcparams():
    before = mpl.rcParams["pdf.fonttype"], mpl.rcParams["svg.hashsalt"]
    mpl.rcParams["pdf.fonttype"] = 3
    with style_context():
        assert mpl.rcParams["pdf.fonttype"] == 42
    assert mpl.rcParams["pdf.fonttype"] == 3
    mpl.rcParams["pdf.fonttype"], mpl.rcParams["svg.hashsalt"] = before


def test_category_colors_are_stable():
    first = category_colors(["h100", "a100", "v100", "a100"])
    second = category_colors(["v100", "h100", "a100"])
    assert first == second
    assert list(first) == ["a100", "h100", "v100"]
    assert first["a100"] == tuple(sns.color_palette("colorblind")[0])
    assert len(set(first.values())) == 3
