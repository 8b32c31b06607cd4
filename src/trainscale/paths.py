"""Where the catalogues and published data live.

The catalogues are data, not code: they sit in ``data/`` at the repository root (README, "Layout"),
and an installed wheel carries a copy under ``trainscale/_data``. ``TRAINSCALE_DATA`` overrides
both.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir"]

_REPO_DATA = Path(__file__).resolve().parents[2] / "data"
_PACKAGE_DATA = Path(__file__).resolve().parent / "_data"


def data_dir() -> Path:
    """Return the folder holding ``hardware.yaml``, ``models.yaml`` and ``calibration.yaml``."""
    override = os.environ.get("TRAINSCALE_DATA")
    if override:
        return Path(override)
    if (_REPO_DATA / "hardware.yaml").is_file():
        return _REPO_DATA
    return _PACKAGE_DATA
