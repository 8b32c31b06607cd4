"""The recipe docs/recipes/add-a-figure-for-every-study.md, followed for real: a new per-study
figure is one :class:`~trainscale.figures.per_study.StudyFigure` entry and its plot function,
drawn from a study's loaded files to ``<stem>.{pdf,png,svg}``."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.figure import Figure

from tests.figures.conftest import simulate
from trainscale.errors import TrainscaleError
from trainscale.figures import per_study
from trainscale.figures._common import add_source_note, new_figure, sim_source
from trainscale.figures.per_study import StudyData, StudyFigure, read_study_data
from trainscale.study.inputs import load_study_output_inputs

REPO = Path(__file__).resolve().parents[2]


def plot_memory(data: StudyData) -> Figure:
    """The recipe's plot function (step 1): memory per GPU against the study's x axis."""
    fig, ax = new_figure(3.5, 2.6)
    for label, series in data.rows.groupby("series_label", sort=False):
        ax.plot(series[data.spec.x], series["mem_gib_per_gpu"], marker="o", label=label)
    ax.set_xlabel(data.spec.x)
    ax.set_ylabel("Memory per GPU (GiB)")
    ax.legend(fontsize=6)
    fig.suptitle(f"Study {data.name}: memory", fontsize=9)
    return add_source_note(fig, sim_source(data.rows) + ".")


def _smoke_inputs():
    """The smoke study's catalogues and study file, read as the rule's script reads them."""
    return load_study_output_inputs(
        REPO / "config/studies/smoke.yaml",
        schema=REPO / "workflow/schemas/study.schema.yaml",
        hardware=REPO / "data/hardware.yaml",
        models=REPO / "data/models.yaml",
    )


@pytest.fixture
def smoke_data(tmp_path: Path) -> StudyData:
    """The smoke study (``config/studies/smoke.yaml``) with a simulated table of its grid, read
    as the rule's script reads it: catalogues, study file, simulated table, the files the
    figure names."""
    loaded = _smoke_inputs()
    simulated = tmp_path / "smoke.parquet"
    simulate(model=["llama2-7b"], tp=[1, 2], num_gpus=[8, 16, 32, 64]).to_parquet(simulated)
    return read_study_data("smoke", loaded, simulated, files={})


def test_a_registered_study_figure_is_drawn_to_its_files(smoke_data, tmp_path, monkeypatch):
    monkeypatch.setitem(
        per_study.STUDY_FIGURES,
        "memory",
        StudyFigure(plot=plot_memory, caption="memory per GPU against the study's x axis."),
    )
    stem = tmp_path / "reports/studies/smoke/memory"
    stem.parent.mkdir(parents=True)

    written = per_study.render_study_figure("memory", stem, smoke_data)

    assert sorted(Path(p).name for p in written) == ["memory.pdf", "memory.png", "memory.svg"]
    png = stem.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = plt.imread(png)
    assert image.shape[:2] == (520, 700)  # 3.5 x 2.6 inches at 200 dpi
    # the rows the figure drew: the smoke grid's tp 1 and 2 series, four GPU counts each
    assert len(smoke_data.rows) == 8
    assert smoke_data.fits is None and smoke_data.rejects is None  # the entry reads neither


def test_the_figure_reads_only_the_files_its_entry_names(smoke_data, tmp_path):
    fits = tmp_path / "fits.csv"
    pd.DataFrame({"metric": ["tokens_per_s_per_gpu"], "estimate": ["NA"]}).to_csv(fits)
    loaded = _smoke_inputs()
    simulated = tmp_path / "smoke.parquet"
    smoke_data.simulated.to_parquet(simulated)

    data = read_study_data("smoke", loaded, simulated, {"fits": fits, "pilots": []})

    assert data.fits is not None and data.fits["estimate"].tolist() == ["NA"]  # text kept
    assert data.pilots is None  # a study without pilot runs: the rule passes []
    with pytest.raises(TrainscaleError, match="unknown study input"):
        read_study_data("smoke", loaded, simulated, {"points": fits})
    with pytest.raises(TrainscaleError, match="unknown study figure 'memory'"):
        per_study.render_study_figure("memory", tmp_path / "memory", data)


def test_the_shipped_scaling_entry_is_drawn_from_the_same_data(smoke_data, tmp_path):
    written = per_study.render_study_figure("scaling", tmp_path / "scaling", smoke_data)

    assert [Path(p).suffix for p in written] == [".pdf", ".png", ".svg"]
    assert per_study.STUDY_FIGURES["scaling"].inputs == ("fits", "rejects", "pilots")
