"""The paper's figures, one module per figure, each saved as PDF, PNG (200 dpi) and SVG.

Every module has ``plot(...)`` (DataFrames in, a Figure out; ``plot_*`` single-panel helpers
take ``ax=None`` and return the Axes) and ``render(stem, ...)``, which draws under the one theme
(:func:`trainscale.report.style_context`) and saves byte-reproducibly
(:func:`trainscale.report.save_figure`). Each figure names its data source under the panels:
simulated (trainscale version and calibration id), published (citations) or measured (runs).
:func:`render_figure` renders one by name from the workflow's files (:data:`FIGURES` says which
inputs each takes and which catalogue files it reads, as
:class:`~trainscale.report.registry.Output` entries, the type the tables' registry uses too).
Figures read tables and never run the simulator (an import-linter contract in
``pyproject.toml``), nor import a table module: what both need (the registry types, the row
selection) is in :mod:`trainscale.report`. What they draw beyond a study's results is computed by
rules of its own (``results/collectives.parquet``, ``results/sim_vs_measured.parquet``). Nor do
they load a catalogue: the caller loads the catalogue files an output reads (the workflow's
script, from the files its rule declares) and passes them in (``tests/test_catalogue_inputs.py``
checks the source for it). The figures drawn once per study are registered apart
(:data:`trainscale.figures.per_study.STUDY_FIGURES`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainscale.report.registry import Input, Output, render_registered, study_input

__all__ = ["FIGURES", "render_figure"]


#: Figure name → what it reads.
FIGURES: dict[str, Output] = {
    "collective_bandwidth": Output(
        inputs={
            "curves": Input("collectives"),
            "validation": Input("validation"),
            "published": Input("published", "published"),  # read with hardware, models, frameworks
        },
        catalogues=("hardware",),
    ),
    "collective_scaling": Output(
        inputs={"curves": Input("collectives")}, catalogues=("hardware", "models")
    ),
    "fsdp_scaleout": Output(inputs={"sim": study_input("fsdp_scaleout")}, catalogues=("models",)),
    "model_parallel": Output(inputs={"sim": study_input("model_parallel")}, catalogues=("models",)),
    "hardware_generations": Output(
        inputs={"sim": study_input("hardware_generations")}, catalogues=("hardware", "models")
    ),
    "power_efficiency": Output(
        inputs={"sim": study_input("power_efficiency")}, catalogues=("models",)
    ),
    "context_length": Output(inputs={"sim": study_input("context_length")}, catalogues=("models",)),
    "compute_per_gpu": Output(
        inputs={"sim": study_input("compute_per_gpu")}, catalogues=("hardware", "models")
    ),
    "marginal_returns": Output(
        inputs={"sim": study_input("fsdp_scaleout")}, catalogues=("models",)
    ),
    "sim_vs_published": Output(
        inputs={"holdout": Input("holdout"), "validation": Input("validation")}
    ),
    "global_batch_inference": Output(inputs={"sim": study_input("global_batch_inference")}),
    "best_plan": Output(
        inputs={"sim": study_input("best_plan")}, catalogues=("hardware", "models")
    ),
    "sim_vs_measured": Output(inputs={"table": Input("sim_vs_measured")}, catalogues=("hardware",)),
    "energy_bill": Output(inputs={"energy": Input("paper/energy")}),
    "dense_vs_moe": Output(
        inputs={"sim": study_input("dense_vs_moe")}, catalogues=("hardware", "models")
    ),
}


def render_figure(
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Render figure ``name`` to ``stem.{pdf,png,svg}`` from the files in ``inputs`` and the
    catalogues it reads (:func:`trainscale.report.registry.render_registered`) with
    ``trainscale.figures.<name>.render``."""
    return render_registered(__name__, FIGURES, name, stem, inputs, catalogues)
