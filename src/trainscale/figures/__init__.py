"""The paper's figures, one module per figure, each saved as PDF, PNG (200 dpi) and SVG.

Every module has ``plot(...)`` (DataFrames in, a Figure out; ``plot_*`` single-panel helpers
take ``ax=None`` and return the Axes) and ``render(stem, ...)``, which draws under the one theme
(:func:`trainscale.report.style_context`) and saves byte-reproducibly
(:func:`trainscale.report.save_figure`). Each figure names its data source under the panels:
simulated (trainscale version and calibration id), published (citations) or measured (runs).
:func:`render_figure` renders one by name from the workflow's files (:data:`FIGURES` says which
inputs each takes and which catalogue files it reads). Figures read tables and never run the
simulator (an import-linter contract in ``pyproject.toml``): what they draw beyond a study's
results is computed by rules of its own (``results/collectives.parquet``,
``results/sim_vs_measured.parquet``). Nor do they load a catalogue: the caller loads the catalogue
files an output reads (the workflow's script, from the files its rule declares) and passes them
in (``tests/test_catalogue_inputs.py`` checks the source for it).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from trainscale.errors import TrainscaleError

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData

__all__ = [
    "CATALOGUES",
    "FIGURES",
    "KIND_CATALOGUES",
    "Input",
    "Output",
    "load_input",
    "render_figure",
    "render_registered",
]

#: The catalogue files a figure or table may read (``data/<name>.yaml``), by name; loaded by
#: the caller: ``hardware`` a :class:`trainscale.sim.system.hardware.HardwareCatalog`, ``models``
#: a mapping of model key to :class:`trainscale.sim.model.shape.ModelShape`, ``frameworks`` and
#: ``nccl`` as :class:`trainscale.sim.catalogue.Catalogue` holds them.
CATALOGUES: tuple[str, ...] = ("hardware", "models", "nccl", "frameworks")

#: The catalogue files an input of each kind (:attr:`Input.kind`) is read with: the published
#: CSV is checked against the GPU catalogue and its throughputs derived with the model shapes.
KIND_CATALOGUES: dict[str, tuple[str, ...]] = {"published": ("hardware", "models")}


@dataclass(frozen=True, slots=True)
class Input:
    """One input of a figure or table: the file it reads, by name, and how it is read."""

    file: str
    """The workflow's name for the file (``rules/common.smk`` maps it to a path):
    ``sim/<study>`` (``results/sim/<study>.parquet``), ``validation``, ``holdout``,
    ``collectives``, ``sim_vs_measured``, ``pilots``, ``paper/claims``, ``paper/claim_sensitivity``
    (``results/<name>.parquet``), ``dataset`` (``results/dataset``) or ``published`` (the
    published measurements CSV)."""
    kind: str = "parquet"
    """How it is read (:func:`load_input`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    """What a figure or table reads."""

    inputs: Mapping[str, Input] = field(default_factory=dict)
    """Argument of its ``render`` → the file it is read from."""
    catalogues: tuple[str, ...] = ()
    """The catalogue files (:data:`CATALOGUES`) its ``render`` takes, each as the keyword
    argument of that name (colours and order of models and GPUs, model shapes, GPU peaks)."""

    def catalogue_files(self) -> tuple[str, ...]:
        """Every catalogue file it reads, in :data:`CATALOGUES` order: those its ``render``
        takes and those its inputs are read with (:data:`KIND_CATALOGUES`). They are the inputs
        of its rule, so that editing one reruns it, and what its caller loads and passes to
        :func:`render_registered`."""
        wanted = {*self.catalogues}
        for spec in self.inputs.values():
            wanted.update(KIND_CATALOGUES.get(spec.kind, ()))
        return tuple(name for name in CATALOGUES if name in wanted)


def _study(name: str) -> Input:
    return Input(f"sim/{name}")


#: Figure name → what it reads.
FIGURES: dict[str, Output] = {
    "collective_bandwidth": Output(
        inputs={
            "curves": Input("collectives"),
            "validation": Input("validation"),
            "published": Input("published", "published"),  # read with hardware and models
        },
        catalogues=("hardware",),
    ),
    "collective_scaling": Output(
        inputs={"curves": Input("collectives")}, catalogues=("hardware", "models")
    ),
    "fsdp_scaleout": Output(inputs={"sim": _study("fsdp_scaleout")}, catalogues=("models",)),
    "model_parallel": Output(inputs={"sim": _study("model_parallel")}, catalogues=("models",)),
    "hardware_generations": Output(
        inputs={"sim": _study("hardware_generations")}, catalogues=("hardware", "models")
    ),
    "power_efficiency": Output(inputs={"sim": _study("power_efficiency")}, catalogues=("models",)),
    "context_length": Output(inputs={"sim": _study("context_length")}, catalogues=("models",)),
    "compute_per_gpu": Output(
        inputs={"sim": _study("compute_per_gpu")}, catalogues=("hardware", "models")
    ),
    "marginal_returns": Output(inputs={"sim": _study("fsdp_scaleout")}, catalogues=("models",)),
    "sim_vs_published": Output(
        inputs={"holdout": Input("holdout"), "validation": Input("validation")}
    ),
    "global_batch_inference": Output(inputs={"sim": _study("global_batch_inference")}),
    "best_plan": Output(inputs={"sim": _study("best_plan")}, catalogues=("hardware", "models")),
    "sim_vs_measured": Output(inputs={"table": Input("sim_vs_measured")}, catalogues=("hardware",)),
}


def load_input(
    kind: str, path: str | os.PathLike[str], catalogues: Mapping[str, Any] | None = None
) -> pd.DataFrame | PublishedData:
    """Read one input of a figure or table.

    ``parquet``: one Parquet file (``results/sim/<study>.parquet``,
    ``results/validation.parquet``, ``results/collectives.parquet``, ...);
    ``dataset_scaling``: the measured and published partitions of the hive-partitioned
    ``results/dataset`` folder, and the scale-out studies of the ``scaling_fits`` table;
    ``published``: the published measurements CSV, normalised
    (:class:`trainscale.published.measurements.PublishedData`; nothing is predicted) with the
    ``hardware`` and ``models`` of ``catalogues`` (:data:`KIND_CATALOGUES`).
    """
    catalogues = catalogues or {}
    missing = [name for name in KIND_CATALOGUES.get(kind, ()) if name not in catalogues]
    if missing:
        raise TrainscaleError(f"input kind {kind!r} is read with catalogue(s) {missing}")
    if kind == "parquet":
        from trainscale.io.parquet import read_frame  # a corrupt file is named

        return read_frame(path)
    if kind == "dataset_scaling":
        from trainscale.dataset import read_dataset
        from trainscale.tables.scaling_fits import SCALING_STUDIES

        return read_dataset(path, sources=("measured", "published"), studies=SCALING_STUDIES)
    if kind == "published":
        from trainscale.published.measurements import load_published

        return load_published(path, hardware=catalogues["hardware"], models=catalogues["models"])
    raise TrainscaleError(f"unknown input kind {kind!r}")


def render_registered(
    what: str,
    registry: Mapping[str, Output],
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Render ``name`` from ``registry`` (:data:`FIGURES` or ``trainscale.tables.TABLES``) with
    ``trainscale.<what>s.<name>.render``, after loading each named input by its kind.

    ``catalogues`` holds the catalogue files the output reads (:meth:`Output.catalogue_files`),
    by name, as the caller loaded them: each input is read with those of its kind and
    ``render`` takes its own (:attr:`Output.catalogues`) as keyword arguments.
    """
    if name not in registry:
        raise TrainscaleError(f"unknown {what} {name!r}; known: {', '.join(registry)}")
    inputs = inputs or {}
    catalogues = catalogues or {}
    output = registry[name]
    missing = [key for key in output.inputs if key not in inputs]
    if missing:
        raise TrainscaleError(f"{what} {name}: missing input(s) {missing}")
    missing = [key for key in output.catalogue_files() if key not in catalogues]
    if missing:
        raise TrainscaleError(f"{what} {name}: missing catalogue(s) {missing}")
    frames = {
        key: load_input(spec.kind, inputs[key], catalogues) for key, spec in output.inputs.items()
    }
    given = {key: catalogues[key] for key in output.catalogues}
    module = importlib.import_module(f"trainscale.{what}s.{name}")
    return module.render(stem, **frames, **given)


def render_figure(
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Render figure ``name`` to ``stem.{pdf,png,svg}`` from the files in ``inputs`` and the
    catalogues it reads (:func:`render_registered`)."""
    return render_registered("figure", FIGURES, name, stem, inputs, catalogues)
