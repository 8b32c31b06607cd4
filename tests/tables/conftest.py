"""Fixtures of the table tests: the figure tests' simulated and fabricated inputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "figure_fixtures", Path(__file__).resolve().parents[1] / "figures" / "conftest.py"
)
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

simulate = _fixtures.simulate
scaleout_sim = _fixtures.scaleout_sim
best_sim = _fixtures.best_sim
validation_rows = _fixtures.validation_rows
holdout_rows = _fixtures.holdout_rows
