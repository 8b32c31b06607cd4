"""The catalogues as one value the caller passes in, as Calculon passes its system.

A :class:`Catalogue` holds what the simulator reads besides the configurations and the
calibration: the GPUs and systems (``hardware.yaml``), the model shapes (``models.yaml``), the
framework profiles (``frameworks.yaml``) and NCCL's cost constants (``nccl.yaml``). Library
functions take it (or the one part they use: ``hardware``, ``models``) as a parameter and never
load one themselves, so the files a computation reads are those its caller named: the workflow's
scripts load the files their rule declares as inputs, the command line loads the shipped ones
once, and :func:`trainscale.predict` loads the shipped ones when it is given none.

Each file is checked against its JSON Schema (``workflow/schemas/<name>.schema.yaml``) when it is
loaded: a bad value raises :class:`~trainscale.errors.InputFileError` naming the file, line, key
and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainscale.errors import TrainscaleError
from trainscale.paths import data_dir
from trainscale.sim.frameworks import FrameworkProfile, load_frameworks
from trainscale.sim.model.shape import ModelShape, load_models
from trainscale.sim.system.collectives import NcclConstants, load_nccl_constants
from trainscale.sim.system.hardware import HardwareCatalog, load_hardware

__all__ = ["CATALOGUE_FILES", "Catalogue", "load_catalogue", "load_catalogue_files"]

#: The catalogue files, by name: ``<name>.yaml`` in a catalogue folder.
CATALOGUE_FILES = ("hardware", "models", "frameworks", "nccl")


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalogue:
    """Everything the simulator reads from the catalogue files."""

    hardware: HardwareCatalog
    """GPUs, systems and fabric factors (``hardware.yaml``)."""
    models: Mapping[str, ModelShape]
    """Model key -> shape (``models.yaml``)."""
    frameworks: Mapping[str, FrameworkProfile]
    """Framework key -> profile (``frameworks.yaml``)."""
    nccl: NcclConstants
    """NCCL's collective cost constants (``nccl.yaml``)."""

    @property
    def gpu_keys(self) -> tuple[str, ...]:
        """The GPU keys, sorted: what a configuration's ``gpu_index`` indexes."""
        return tuple(sorted(self.hardware.gpus))

    @property
    def framework_keys(self) -> tuple[str, ...]:
        """The framework list: the profile keys of ``frameworks.yaml``, in file order, what a
        configuration's ``framework`` code indexes and what the calibration's offsets, the
        interval facts and the published-data readers take from their caller."""
        return tuple(self.frameworks)


def load_catalogue(
    source: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]] | None = None,
) -> Catalogue:
    """Load (each file is cached) and check the four catalogue files.

    Parameters
    ----------
    source
        A folder holding ``hardware.yaml``, ``models.yaml``, ``frameworks.yaml`` and
        ``nccl.yaml``; or a mapping from each of :data:`CATALOGUE_FILES` to its file (a
        Snakemake job passes its named inputs); None: the shipped catalogues
        (:func:`trainscale.paths.data_dir`, ``TRAINSCALE_DATA`` if set). Only a caller at the
        top (a command, a workflow script, a test fixture) passes None.

    Raises
    ------
    trainscale.errors.InputFileError
        A file that cannot be read or breaks its schema (naming the file, line, key and what
        is allowed).
    trainscale.errors.TrainscaleError
        A mapping that lacks one of the four files.
    """
    if source is None or isinstance(source, str | os.PathLike):
        folder = Path(source) if source is not None else data_dir()
        paths = {name: folder / f"{name}.yaml" for name in CATALOGUE_FILES}
    else:
        missing = [name for name in CATALOGUE_FILES if name not in source]
        if missing:
            raise TrainscaleError(
                f"catalogue: no file given for {', '.join(missing)} "
                f"(give all of {', '.join(CATALOGUE_FILES)})"
            )
        paths = {name: Path(source[name]) for name in CATALOGUE_FILES}
    return Catalogue(
        hardware=load_hardware(paths["hardware"]),
        models=load_models(paths["models"]),
        frameworks=load_frameworks(paths["frameworks"]),
        nccl=load_nccl_constants(paths["nccl"]),
    )


def load_catalogue_files(
    files: Mapping[str, str | os.PathLike[str]],
) -> dict[
    str, HardwareCatalog | Mapping[str, ModelShape] | Mapping[str, FrameworkProfile] | NcclConstants
]:
    """Load (each file is cached) and check some of the catalogue files, each from its file.

    For a caller that reads only some of them: a figure's or table's rule declares just the
    catalogue files it reads, and its script loads those and passes them on.

    Parameters
    ----------
    files
        Catalogue name (one of :data:`CATALOGUE_FILES`) → its file.

    Returns
    -------
    dict
        Name → the value :class:`Catalogue` holds under that name (``hardware``: a
        :class:`~trainscale.sim.system.hardware.HardwareCatalog`; ``models``: model key →
        :class:`~trainscale.sim.model.shape.ModelShape`; ...), in the order of ``files``.

    Raises
    ------
    trainscale.errors.InputFileError
        A file that cannot be read or breaks its schema.
    trainscale.errors.TrainscaleError
        A name that is not a catalogue file.
    """
    unknown = [name for name in files if name not in CATALOGUE_FILES]
    if unknown:
        raise TrainscaleError(
            f"catalogue: unknown file(s) {', '.join(unknown)} (known: {', '.join(CATALOGUE_FILES)})"
        )
    loaders = {
        "hardware": load_hardware,
        "models": load_models,
        "frameworks": load_frameworks,
        "nccl": load_nccl_constants,
    }
    return {name: loaders[name](Path(path)) for name, path in files.items()}
