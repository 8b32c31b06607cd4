"""The study's figures, one module per figure, each saved as PDF, PNG (200 dpi) and SVG.

Every module has ``plot(...)`` (DataFrames in, a Figure out; ``plot_*`` single-panel helpers
take ``ax=None`` and return the Axes) and ``render(stem, ...)``, which draws under the one theme
(:func:`trainscale.report.style_context`) and saves byte-reproducibly
(:func:`trainscale.report.save_figure`). Each figure names its data source under the panels:
simulated (trainscale version and calibration id), published (citations) or measured (runs).
:func:`render_figure` renders one by name from the workflow's files (:data:`FIGURES` says which
inputs each takes).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.errors import TrainscaleError

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData

__all__ = ["FIGURES", "load_input", "render_figure", "render_registered"]

#: Figure name → the named inputs its ``render`` takes (input name → kind of file).
FIGURES: dict[str, dict[str, str]] = {
    "collective_bandwidth": {"collectives": "published_collectives"},
    "collective_scaling": {},
    "fsdp_scaleout": {"sim": "parquet"},
    "model_parallel": {"sim": "parquet"},
    "hardware_generations": {"sim": "parquet"},
    "power_efficiency": {"sim": "parquet"},
    "context_length": {"sim": "parquet"},
    "compute_per_gpu": {"sim": "parquet"},
    "marginal_returns": {"sim": "parquet"},
    "sim_vs_published": {"holdout": "parquet", "validation": "parquet"},
    "global_batch_inference": {"sim": "parquet"},
    "best_plan": {"sim": "parquet"},
    "sim_vs_measured": {"dataset": "dataset_measured"},
}


def load_input(kind: str, path: str | os.PathLike[str]) -> pd.DataFrame | PublishedData:
    """Read one input of a figure or table.

    ``parquet``: one Parquet file (``results/sim/<study>.parquet``,
    ``results/validation.parquet``); ``dataset``: the hive-partitioned ``results/dataset``
    folder (``dataset_measured``: its measured partitions only; ``dataset_scaling``: the
    measured and published partitions and the scale-out studies of the ``scaling_fits`` table);
    ``published_collectives``: the published measurements CSV, whose nccl-tests rows
    are predicted with the collective model
    (:func:`trainscale.published.accuracy.validate_published`);
    ``published``: the published measurements CSV, normalised
    (:class:`trainscale.published.measurements.PublishedData`).
    """
    if kind == "parquet":
        return pd.read_parquet(path)
    if kind == "dataset":
        from trainscale.dataset import read_dataset

        return read_dataset(path)
    if kind == "dataset_measured":
        from trainscale.dataset import read_dataset

        return read_dataset(path, sources=("measured",))
    if kind == "dataset_scaling":
        from trainscale.dataset import read_dataset
        from trainscale.tables.scaling_fits import SCALING_STUDIES

        return read_dataset(path, sources=("measured", "published"), studies=SCALING_STUDIES)
    if kind == "published_collectives":
        from trainscale.published.accuracy import validate_published
        from trainscale.published.measurements import load_published

        return validate_published(published=load_published(path))["collectives"]
    if kind == "published":
        from trainscale.published.measurements import load_published

        return load_published(path)
    raise TrainscaleError(f"unknown input kind {kind!r}")


def render_registered(
    what: str,
    registry: Mapping[str, Mapping[str, str]],
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """Render ``name`` from ``registry`` (:data:`FIGURES` or ``trainscale.tables.TABLES``) with
    ``trainscale.<what>s.<name>.render``, after loading each named input by its kind."""
    if name not in registry:
        raise TrainscaleError(f"unknown {what} {name!r}; known: {', '.join(registry)}")
    inputs = inputs or {}
    missing = [key for key in registry[name] if key not in inputs]
    if missing:
        raise TrainscaleError(f"{what} {name}: missing input(s) {missing}")
    frames = {key: load_input(kind, inputs[key]) for key, kind in registry[name].items()}
    module = importlib.import_module(f"trainscale.{what}s.{name}")
    return module.render(stem, **frames)


def render_figure(
    name: str, stem: str | os.PathLike[str], inputs: Mapping[str, str] | None = None
) -> tuple[Path, ...]:
    """Render figure ``name`` to ``stem.{pdf,png,svg}`` from the files in ``inputs``."""
    return render_registered("figure", FIGURES, name, stem, inputs)
