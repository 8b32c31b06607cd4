"""The calibrated power terms beyond the GPU board: the ``power`` block of
``data/calibration.yaml``.

The GPU-board phase model (:mod:`trainscale.sim.system.power`) keeps its parameters in the
calibration's ``parameters`` block (they are part of ``calibration_id``; the power limit's clock
depends on them). What the metered node-power runs calibrate lives in a block of its own, written
by a separate stage of ``trainscale calibrate`` (:mod:`trainscale.calibrate.power`), so refitting
it changes no throughput parameter, no throughput prediction and no ``calibration_id``:

- ``host_power_scale``: multiplies the catalogue's host power of every system (CPUs, DRAM, NICs,
  NVSwitch, fans; ``host_power`` in ``data/hardware.yaml``), one value shared by all systems;
- ``node_power_log_sigma`` and ``energy_log_sigma``: the spread of ``log(predicted/measured)`` of
  node power and of node energy per token on sources left out of the fit, which give the 80 %
  intervals (``exp(±z·sigma)``, ``z`` = 1.2816, the normal 90th percentile).

A file without the block gives the priors (scale 1) and no intervals (NaN interval columns).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from trainscale.errors import InputFileError
from trainscale.io.yaml import load_yaml
from trainscale.paths import data_dir

__all__ = [
    "HOST_POWER_SCALE_BOUNDS",
    "HOST_POWER_SCALE_PRIOR_SD",
    "INTERVAL_Z",
    "PowerTerms",
    "load_power_terms",
]

#: Bounds of ``host_power_scale``: the catalogue's host figures are engineering estimates of a
#: range (reference notes section 5.3), so half to twice them.
HOST_POWER_SCALE_BOUNDS = (0.5, 2.0)
#: Standard deviation of the Gaussian prior on ``host_power_scale`` (prior value 1): half the
#: bound range, as for the throughput parameters.
HOST_POWER_SCALE_PRIOR_SD = 0.75
#: The 80 % interval's half-width in standard deviations of a normal log error (90th percentile).
INTERVAL_Z = 1.2815515655446004


@dataclass(frozen=True, slots=True)
class PowerTerms:
    """The node-power terms: ``host_power_scale`` (1), the held-out log-error spreads of node
    power and of node energy per token (None: no interval)."""

    host_power_scale: float = 1.0
    node_power_log_sigma: float | None = None
    energy_log_sigma: float | None = None

    @property
    def power_id(self) -> str:
        """Content hash of the terms (12 hex digits), as ``calibration_id`` is of the
        parameters."""
        payload = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def as_dict(self) -> dict[str, float | None]:
        """The terms by name."""
        return asdict(self)


def parse_power_terms(path: Path, block: object) -> PowerTerms:
    """The terms of a calibration file's ``power`` block (None: the priors)."""
    if block is None:
        return PowerTerms()
    if not isinstance(block, dict) or not isinstance(block.get("terms"), dict):
        raise InputFileError(path, "power: expected a mapping with 'terms'; regenerate it with "
                             "trainscale calibrate")  # fmt: skip
    terms = block["terms"]
    values: dict[str, float | None] = {}
    for name in ("host_power_scale", "node_power_log_sigma", "energy_log_sigma"):
        value = terms.get(name)
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise InputFileError(path, f"power.terms.{name}: expected a number, got {value!r}")
        values[name] = None if value is None else float(value)
    lower, upper = HOST_POWER_SCALE_BOUNDS
    scale = values["host_power_scale"]
    if scale is None or not lower <= scale <= upper:
        raise InputFileError(
            path, f"power.terms.host_power_scale: {scale} outside its bounds [{lower}, {upper}]"
        )
    return PowerTerms(
        host_power_scale=scale,
        node_power_log_sigma=values["node_power_log_sigma"],
        energy_log_sigma=values["energy_log_sigma"],
    )


@cache
def _load(path: Path) -> PowerTerms:
    if not path.is_file():
        return PowerTerms()
    data = load_yaml(path)
    return parse_power_terms(path, data.get("power") if isinstance(data, dict) else None)


def load_power_terms(path: str | Path | None = None) -> PowerTerms:
    """The ``power`` block of a calibration file (default ``data/calibration.yaml``)."""
    return _load(Path(path) if path is not None else data_dir() / "calibration.yaml")
