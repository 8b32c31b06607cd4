"""Where the shipped catalogues, published data and input schemas live.

The catalogues are data, not code: they sit in ``data/`` at the repository root (README, "Layout"),
and an installed wheel carries a copy under ``trainscale/_data``. ``TRAINSCALE_DATA`` overrides
both. Only the loaders' defaults and the command layer use :func:`data_dir`: a library function
gets its catalogues and calibration from its caller (:mod:`trainscale.sim.catalogue`).

The JSON Schemas of the inputs sit in ``workflow/schemas/`` (a wheel: ``trainscale/_data``);
``TRAINSCALE_SCHEMAS`` overrides both. The workflow sets it to its own ``workflow/schemas/``
(``rules/common.smk``), so the schema a rule's script checks against is the file the rule declares
as an input.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir", "schema_file"]

_REPO_DATA = Path(__file__).resolve().parents[2] / "data"
_PACKAGE_DATA = Path(__file__).resolve().parent / "_data"
_REPO_SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"


def data_dir() -> Path:
    """Return the folder holding ``hardware.yaml``, ``models.yaml`` and ``calibration.yaml``."""
    override = os.environ.get("TRAINSCALE_DATA")
    if override:
        return Path(override)
    if (_REPO_DATA / "hardware.yaml").is_file():
        return _REPO_DATA
    return _PACKAGE_DATA


def schema_file(name: str) -> Path:
    """The JSON Schema ``<name>.schema.yaml``: in ``TRAINSCALE_SCHEMAS`` if set, else
    ``workflow/schemas/`` in the repository, else the copy an installed wheel carries under
    ``trainscale/_data``."""
    filename = f"{name}.schema.yaml"
    override = os.environ.get("TRAINSCALE_SCHEMAS")
    if override:
        return Path(override) / filename
    repo = _REPO_SCHEMAS / filename
    return repo if repo.is_file() else _PACKAGE_DATA / filename
