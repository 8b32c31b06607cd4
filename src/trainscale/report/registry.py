"""What the paper's figures and tables read: the registry entries and the loading of their inputs.

A figure (:data:`trainscale.figures.FIGURES`) or table (:data:`trainscale.tables.TABLES`) is one
:class:`Output`: the files its ``render`` reads, by argument name (:class:`Input`), and the
catalogue files it takes. Both registries are built from these types and rendered by
:func:`render_output`, so that figures and tables share them without importing each other (the
import-linter contract ``trainscale.figures | trainscale.tables`` in ``pyproject.toml``). Nothing
here loads a catalogue: the caller (the workflow's script, from the files its rule declares)
loads the catalogue files an output reads and passes them in.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.report.select import SCALING_STUDIES

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData

__all__ = [
    "CATALOGUES",
    "KIND_CATALOGUES",
    "Input",
    "Output",
    "load_input",
    "registered",
    "render_output",
    "render_registered",
    "study_input",
]

#: The catalogue files a figure or table may read (``data/<name>.yaml``), by name; loaded by
#: the caller: ``hardware`` a :class:`trainscale.sim.system.hardware.HardwareCatalog`, ``models``
#: a mapping of model key to :class:`trainscale.sim.model.shape.ModelShape`, ``frameworks`` and
#: ``nccl`` as :class:`trainscale.sim.catalogue.Catalogue` holds them.
CATALOGUES: tuple[str, ...] = ("hardware", "models", "nccl", "frameworks")

#: The catalogue files an input of each kind (:attr:`Input.kind`) is read with: the published
#: CSV is checked against the GPU catalogue, its throughputs derived with the model shapes and
#: its framework wording mapped to the profiles of the framework catalogue.
KIND_CATALOGUES: dict[str, tuple[str, ...]] = {"published": ("hardware", "models", "frameworks")}


@dataclass(frozen=True, slots=True)
class Input:
    """One input of a figure or table: the file it reads, by name, and how it is read."""

    file: str
    """The workflow's name for the file (``rules/common.smk`` maps it to a path):
    ``sim/<study>`` (``results/sim/<study>.parquet``), ``validation``, ``holdout``,
    ``collectives``, ``sim_vs_measured``, ``pilots``, ``paper/claims``, ``paper/claim_sensitivity``,
    ``paper/energy`` (``results/<name>.parquet``), ``dataset`` (``results/dataset``) or
    ``published`` (the published measurements CSV)."""
    kind: str = "parquet"
    """How it is read (:func:`load_input`)."""


def study_input(study: str) -> Input:
    """The simulated table of ``study`` (``results/sim/<study>.parquet``) as an input."""
    return Input(f"sim/{study}")


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
        :func:`render_output`."""
        wanted = {*self.catalogues}
        for spec in self.inputs.values():
            wanted.update(KIND_CATALOGUES.get(spec.kind, ()))
        return tuple(name for name in CATALOGUES if name in wanted)


def load_input(
    kind: str, path: str | os.PathLike[str], catalogues: Mapping[str, Any] | None = None
) -> pd.DataFrame | PublishedData:
    """Read one input of a figure or table.

    ``parquet``: one Parquet file (``results/sim/<study>.parquet``,
    ``results/validation.parquet``, ``results/collectives.parquet``, ...);
    ``dataset_scaling``: the measured and published partitions of the hive-partitioned
    ``results/dataset`` folder, and the scale-out studies of the ``scaling_fits`` table
    (:data:`~trainscale.report.select.SCALING_STUDIES`);
    ``published``: the published measurements CSV, normalised
    (:class:`trainscale.published.measurements.PublishedData`; nothing is predicted) with the
    ``hardware``, ``models`` and ``frameworks`` of ``catalogues`` (:data:`KIND_CATALOGUES`).
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

        return read_dataset(path, sources=("measured", "published"), studies=SCALING_STUDIES)
    if kind == "published":
        from trainscale.published.measurements import load_published

        return load_published(
            path, hardware=catalogues["hardware"], models=catalogues["models"],
            frameworks=tuple(catalogues["frameworks"]),
        )  # fmt: skip
    raise TrainscaleError(f"unknown input kind {kind!r}")


def registered(what: str, registry: Mapping[str, Output], name: str) -> Output:
    """The entry ``name`` of ``registry`` (a figure or table, ``what``); an unknown name is a
    :class:`TrainscaleError` listing the known ones."""
    if name not in registry:
        raise TrainscaleError(f"unknown {what} {name!r}; known: {', '.join(registry)}")
    return registry[name]


def render_output(
    label: str,
    output: Output,
    render: Callable[..., tuple[Path, ...]],
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Call ``render(stem, **frames, **catalogues)`` for ``output`` (``label``: ``figure <name>``
    or ``table <name>``, for the messages), after loading each named input by its kind.

    ``catalogues`` holds the catalogue files the output reads (:meth:`Output.catalogue_files`),
    by name, as the caller loaded them: each input is read with those of its kind and
    ``render`` takes its own (:attr:`Output.catalogues`) as keyword arguments.
    """
    inputs = inputs or {}
    catalogues = catalogues or {}
    missing = [key for key in output.inputs if key not in inputs]
    if missing:
        raise TrainscaleError(f"{label}: missing input(s) {missing}")
    missing = [key for key in output.catalogue_files() if key not in catalogues]
    if missing:
        raise TrainscaleError(f"{label}: missing catalogue(s) {missing}")
    frames = {
        key: load_input(spec.kind, inputs[key], catalogues) for key, spec in output.inputs.items()
    }
    given = {key: catalogues[key] for key in output.catalogues}
    return render(stem, **frames, **given)


def render_registered(
    package: str,
    registry: Mapping[str, Output],
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Render entry ``name`` of ``registry`` with the ``render`` of its module,
    ``<package>.<name>`` (``package``: ``trainscale.figures`` or ``trainscale.tables``, whose
    ``__init__`` passes its own name: the module is imported only when rendered, so reading a
    registry imports no plotting code), as :func:`render_output` does."""
    what = package.rsplit(".", 1)[-1].removesuffix("s")
    output = registered(what, registry, name)
    render = importlib.import_module(f"{package}.{name}").render
    return render_output(f"{what} {name}", output, render, stem, inputs, catalogues)
