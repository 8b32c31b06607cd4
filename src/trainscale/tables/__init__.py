"""The paper's tables, one module per table, each written as CSV, Markdown and LaTeX.

- ``hardware``: GPUs, their default systems and each one's growth over the row above;
- ``models``: shapes and parameter counts;
- ``claims``: the paper's headline numbers against the simulator with the paper setup
  (``results/paper/claims.parquet``);
- ``scaling_fits``: log-log (HC3) and USL fits of every scale-out series;
- ``validation``: error of the simulator per published source, held out first;
- ``pilots``: pilot-calibrated predictions of the published scaling series against the base and
  perfect weak scaling (``results/pilots.parquet``);
- ``best_plans``: the fastest plan that fits per model and GPU count;
- ``claim_sensitivity``: the claims along the profile of the NCCL latency scale, the parameter
  the headline drop hangs on and the published data barely constrain
  (``results/paper/claim_sensitivity.parquet``).

Every module has ``render(stem, ...)``; :func:`render_table` renders one by name from the
workflow's files and the catalogues its caller loaded (:data:`TABLES` says which inputs each
takes and which catalogue files it reads). Tables read tables and never run the simulator (an
import-linter contract in ``pyproject.toml``), nor load a catalogue.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainscale.report.registry import Input, Output, render_registered

__all__ = ["TABLES", "render_table"]

#: Table name → what it reads (inputs by name, see :class:`trainscale.report.registry.Input`; the
#: catalogue files its ``render`` takes).
TABLES: dict[str, Output] = {
    "hardware": Output(catalogues=("hardware",)),
    "models": Output(catalogues=("models",)),
    "claims": Output(inputs={"claims": Input("paper/claims")}),
    "scaling_fits": Output(
        inputs={"dataset": Input("dataset", "dataset_scaling")}, catalogues=("models",)
    ),
    "validation": Output(
        inputs={
            "validation": Input("validation"),
            "holdout": Input("holdout"),
            "published": Input("published", "published"),  # read with hardware, models, frameworks
            "sim_vs_measured": Input("sim_vs_measured"),  # its warned rows are listed
        },
    ),
    "best_plans": Output(inputs={"sim": Input("sim/best_plan")}, catalogues=("models",)),
    "claim_sensitivity": Output(inputs={"sensitivity": Input("paper/claim_sensitivity")}),
    "pilots": Output(inputs={"pilots": Input("pilots")}),
}


def render_table(
    name: str,
    stem: str | os.PathLike[str],
    inputs: Mapping[str, str] | None = None,
    catalogues: Mapping[str, Any] | None = None,
) -> tuple[Path, ...]:
    """Render table ``name`` to ``stem.{csv,md,tex}`` from the files in ``inputs`` and the
    catalogues it reads (:func:`trainscale.report.registry.render_registered`) with
    ``trainscale.tables.<name>.render``."""
    return render_registered(__name__, TABLES, name, stem, inputs, catalogues)
