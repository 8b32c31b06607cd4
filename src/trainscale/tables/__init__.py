"""The study's tables, one module per table, each written as CSV, Markdown and LaTeX.

- ``hardware``: GPUs, their default systems and each one's growth over the row above;
- ``models``: shapes and parameter counts;
- ``claims``: the study's headline numbers against the simulator with the study setup;
- ``scaling_fits``: log-log (HC3) and USL fits of every scale-out series;
- ``validation``: error of the simulator per published source, held out first;
- ``best_plans``: the fastest plan that fits per model and GPU count;
- ``claim_sensitivity``: the claims along the profile of the NCCL latency scale, the parameter
  the headline drop hangs on and the published data barely constrain.

Every module has ``render(stem, ...)``; :func:`render_table` renders one by name from the
workflow's files (:data:`TABLES` says which inputs each takes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from trainscale.figures import render_registered

__all__ = ["TABLES", "render_table"]

#: Table name → the named inputs its ``render`` takes (input name → kind of file, see
#: :func:`trainscale.figures.load_input`).
TABLES: dict[str, dict[str, str]] = {
    "hardware": {},
    "models": {},
    "claims": {},
    "scaling_fits": {"dataset": "dataset_scaling"},
    "validation": {"validation": "parquet", "holdout": "parquet", "published": "published"},
    "best_plans": {"sim": "parquet"},
    "claim_sensitivity": {"published": "published"},
}


def render_table(
    name: str, stem: str | os.PathLike[str], inputs: Mapping[str, str] | None = None
) -> tuple[Path, ...]:
    """Render table ``name`` to ``stem.{csv,md,tex}`` from the files in ``inputs``."""
    return render_registered("table", TABLES, name, stem, inputs)
