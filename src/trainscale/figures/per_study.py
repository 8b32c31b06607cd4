"""The figures drawn once for every study: ``reports/studies/<study>/<figure>.{pdf,png,svg}``.

Each is one :class:`StudyFigure` in :data:`STUDY_FIGURES`: the function that draws it from one
study's loaded files (:class:`StudyData` in, a Figure out) and the study files it reads beyond
the study's own simulated table (:data:`STUDY_INPUTS`). The workflow's one rule
``study_figure`` (``rules/studies.smk``) draws every entry for every study listed in the config:
adding a figure for every study is one entry here and its plot function, no rule edit
(``docs/recipes/add-a-figure-for-every-study.md``). :func:`render_study_figure` saves one as
PDF, PNG (200 dpi) and SVG under the one theme, byte-reproducibly.

An entry's ``plot`` is called only when the figure is drawn: the workflow reads this registry
when it parses, so a plot function that needs Matplotlib's modules (every real one) is reached
through a small function here that imports its module on first use (:func:`_scaling`), and
parsing the workflow never waits for Matplotlib.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.errors import TrainscaleError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog
    from trainscale.study.inputs import StudyOutputInputs
    from trainscale.study.report import ReportSpec
    from trainscale.study.spec import Study

__all__ = [
    "STUDY_FIGURES",
    "STUDY_INPUTS",
    "StudyData",
    "StudyFigure",
    "read_study_data",
    "render_study_figure",
]


@dataclass(frozen=True, slots=True)
class StudyData:
    """One study's files, loaded: what a per-study figure is drawn from."""

    name: str
    """The study's name (its file ``config/studies/<name>.yaml``)."""
    study: Study
    """The study file, checked against its schema and the catalogues."""
    spec: ReportSpec
    """What the study's outputs show (x axis, series, facet, metrics; its ``report:`` block)."""
    hardware: HardwareCatalog
    """The GPU catalogue (``data/hardware.yaml``): GPU colours, systems for the setup note."""
    models: Mapping[str, ModelShape]
    """The model catalogue (``data/models.yaml``): model colours and order."""
    simulated: pd.DataFrame
    """Every simulated row of the study (``results/sim/<study>.parquet`` as its dataset
    partition reads, :func:`trainscale.dataset.read_study_results`)."""
    rows: pd.DataFrame
    """The rows its outputs show (:func:`trainscale.study.report.select_rows` of
    :attr:`simulated`: one per facet, series and x value; ``attrs["dropped_memory"]`` counts
    the rows left out because they do not fit in memory)."""
    fits: pd.DataFrame | None = None
    """The study's fits table (``reports/studies/<study>/fits.csv``), if the figure reads it."""
    rejects: pd.DataFrame | None = None
    """The grid points the study could not plan (``results/studies/<study>/rejects.parquet``),
    if the figure reads them."""
    pilots: pd.DataFrame | None = None
    """The measured pilot runs the study was calibrated on, if the figure reads them and the
    study names its own measurements (else None)."""


def _read_fits(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A fits table as written: empty cells missing, the text ``NA`` kept as text."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


#: The study files a per-study figure may read beyond the study's simulated table, by the name
#: of its :class:`StudyData` field, with their reader. ``rules/studies.smk`` maps each name to
#: its path (``study_figure_inputs``): ``fits`` ``reports/studies/<study>/fits.csv`` (the fits
#: job runs first), ``rejects`` ``results/studies/<study>/rejects.parquet``, ``pilots``
#: ``results/calibration/<study>.pilots.parquet`` (only for a study calibrated on its own
#: measurements; none otherwise).
STUDY_INPUTS: dict[str, Callable[[str | os.PathLike[str]], pd.DataFrame]] = {
    "fits": _read_fits,
    "rejects": pd.read_parquet,
    "pilots": pd.read_parquet,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyFigure:
    """One figure drawn for every study."""

    plot: Callable[[StudyData], Figure]
    """Draws the figure from the study's data; called under the one theme
    (:func:`render_study_figure`), it does not save or close the figure."""
    inputs: tuple[str, ...] = ()
    """The study files it reads beyond the simulated table (names of :data:`STUDY_INPUTS`);
    the others are None in its :class:`StudyData`."""
    caption: str
    """Its caption in the workflow's report, after ``Study <name> (simulated), <figure>:``
    and before the study's description (``workflow/report/study_figure.rst``)."""


def _scaling(data: StudyData) -> Figure:
    """The study's metrics against its x axis
    (:func:`~trainscale.figures.study_scaling.plot_study_scaling`), imported on first use."""
    from trainscale.figures.study_scaling import plot_study_scaling

    return plot_study_scaling(data)


#: Figure name (the file stem under ``reports/studies/<study>/``) → how it is drawn.
STUDY_FIGURES: dict[str, StudyFigure] = {
    "scaling": StudyFigure(
        plot=_scaling,
        inputs=("fits", "rejects", "pilots"),
        caption="global tokens/s, tokens/s per GPU, MFU, power per GPU and exposed "
        "communication against the study's x axis, one line per series, 80 % prediction "
        "interval as a band on the throughput panels.",
    ),
}


def read_study_data(
    name: str,
    loaded: StudyOutputInputs,
    simulated: str | os.PathLike[str],
    files: Mapping[str, str | os.PathLike[str] | None],
) -> StudyData:
    """Read study ``name``'s simulated table (the path ``simulated``) and the study files in
    ``files`` (name of :data:`STUDY_INPUTS` → path; a missing or empty path reads as None),
    with the catalogues and study file of ``loaded``
    (:func:`trainscale.study.inputs.load_study_output_inputs`)."""
    from trainscale.dataset import read_study_results
    from trainscale.study.report import select_rows

    unknown = sorted(set(files) - set(STUDY_INPUTS))
    if unknown:
        raise TrainscaleError(f"unknown study input(s) {unknown}; known: {', '.join(STUDY_INPUTS)}")
    frame = read_study_results(simulated, name)
    tables = {key: STUDY_INPUTS[key](path) for key, path in files.items() if path}
    return StudyData(
        name=name,
        study=loaded.study,
        spec=loaded.spec,
        hardware=loaded.hardware,
        models=loaded.models,
        simulated=frame,
        rows=select_rows(frame, loaded.spec),
        **tables,
    )


def render_study_figure(
    figure: str, stem: str | os.PathLike[str], data: StudyData
) -> tuple[Path, ...]:
    """Draw the per-study figure ``figure`` (an entry of :data:`STUDY_FIGURES`) from ``data``
    and save ``stem.{pdf,png,svg}`` byte-reproducibly; returns the paths."""
    from trainscale.figures._common import save_styled

    if figure not in STUDY_FIGURES:
        raise TrainscaleError(f"unknown study figure {figure!r}; known: {', '.join(STUDY_FIGURES)}")
    return save_styled(lambda: STUDY_FIGURES[figure].plot(data), stem)
