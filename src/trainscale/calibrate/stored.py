"""What every user calibration would measure on the published data, measured once and stored.

A user calibration (:func:`trainscale.calibrate.user.calibrate_user`) widens its intervals with the
distance from its measured GPU counts by a quantile table measured on the published scaling
series (:func:`trainscale.calibrate.pilot_series.pilot_errors`: one base fit per source, then a
pilot refit per series; tens of seconds). That table depends on the published data and on the
base calibration only, never on the user's rows (the rows choose only the pilot GPU counts the
distance is measured from), so ``trainscale calibrate`` measures it once with the calibration it
writes and stores it in the file's ``published_pilot_errors`` block, keyed by that calibration's
``calibration_id`` (:class:`StoredPilotErrors`). A user calibration on a base with the same id
reads the table from the block; on any other base (hand-edited values, another file, a block
written before the values changed) it measures the table again and says so
(:func:`pilot_model`), never using another calibration's table.

The stored values are those :func:`~trainscale.calibrate.pilot_series.pilot_interval_model`
fits (6 significant digits), so a calibration from the block is byte for byte the calibration
measured afresh.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.io.yaml import load_yaml
from trainscale.sim.calibration import MALFORMED, malformed_block
from trainscale.sim.pilot_intervals import (
    PilotIntervals,
    bins_as_dicts,
    bins_from_dicts,
    capped_from_dicts,
    growth_as_dict,
    growth_from_dict,
    reach_as_dict,
    reach_from_dict,
)

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["BLOCK", "StoredPilotErrors", "pilot_model", "read_stored"]

#: The key of the block in a calibration file.
BLOCK = "published_pilot_errors"


@dataclass(frozen=True, slots=True)
class StoredPilotErrors:
    """The pilot quantile table measured on the published scaling series with the calibration
    ``calibration_id`` (per bin of :data:`~trainscale.sim.pilot_intervals.BIN_EDGES`: lower and
    upper log factors of tokens/s per GPU, the published rows in the bin; the largest log2 GPU
    distance measured), with the number of series and rows it was measured on."""

    calibration_id: str
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    rows: tuple[int, ...]
    max_distance: float
    series: int
    series_rows: int
    reach: float = math.inf
    """The pilot reach (:mod:`trainscale.calibrate.pilot_reach`)."""
    capped: tuple[bool, ...] = ()
    """Per bin, whether the interval is clipped to the shipped one."""
    growth_rate: float = 0.0
    """The absolute-scale growth rate (:mod:`trainscale.sim.interval_scale`)."""

    @classmethod
    def of(cls, errors: pd.DataFrame, calibration_id: str) -> StoredPilotErrors:
        """The table fitted on ``errors`` (rows of
        :func:`~trainscale.calibrate.pilot_series.pilot_errors` measured with the calibration
        ``calibration_id``)."""
        from trainscale.calibrate.pilot_series import pilot_interval_model

        model = pilot_interval_model(errors, np.array([1]))
        return cls(
            calibration_id, model.lower, model.upper, model.rows, model.max_distance,
            series=int(errors["series"].nunique()), series_rows=len(errors),
            reach=model.reach, capped=model.capped, growth_rate=model.growth_rate,
        )  # fmt: skip

    def intervals(self, pilot_gpus: pd.Series | np.ndarray) -> PilotIntervals:
        """The :class:`~trainscale.sim.pilot_intervals.PilotIntervals` of pilots at
        ``pilot_gpus`` (any repeats), as ``pilot_interval_model(errors, pilot_gpus)`` gives."""
        return PilotIntervals(
            pilot_gpus=tuple(sorted({int(g) for g in np.asarray(pilot_gpus)})),
            lower=self.lower, upper=self.upper, rows=self.rows, max_distance=self.max_distance,
            reach=self.reach, capped=self.capped, growth_rate=self.growth_rate,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "calibration_id": self.calibration_id,
            "what": "the pilot interval table of every user calibration on this calibration "
            "(trainscale calibrate --measurements), measured once on the published scaling "
            "series (trainscale.calibrate.pilot_series.pilot_errors, each series' base fitted "
            "without its source; trainscale.calibrate.stored); used only while calibration_id "
            "is the base calibration's",
            "series": self.series,
            "rows": self.series_rows,
            "bins": bins_as_dicts(self.lower, self.upper, self.rows, self.capped),
            "max_log2_distance_measured": self.max_distance,
            **growth_as_dict(self.growth_rate),
            **reach_as_dict(self.reach),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredPilotErrors:
        lower, upper, rows = bins_from_dicts(data["bins"])
        return cls(
            calibration_id=str(data["calibration_id"]),
            lower=lower,
            upper=upper,
            rows=rows,
            max_distance=float(data["max_log2_distance_measured"]),
            series=int(data["series"]),
            series_rows=int(data["rows"]),
            reach=reach_from_dict(data),
            capped=capped_from_dicts(data["bins"]),
            growth_rate=growth_from_dict(data),
        )


def read_stored(path: str | Path) -> StoredPilotErrors | None:
    """The ``published_pilot_errors`` block of the calibration file ``path``; None when the file
    or the block is missing. A malformed block is an error naming the file."""
    path = Path(path)
    if not path.is_file():
        return None
    document = load_yaml(path)
    block = document.get(BLOCK) if isinstance(document, dict) else None
    if block is None:
        return None
    try:
        return StoredPilotErrors.from_dict(block)
    except MALFORMED as error:
        raise malformed_block(path, BLOCK, error) from None


def pilot_model(
    pilot_gpus: pd.Series | np.ndarray,
    *,
    base: Calibration,
    stored: StoredPilotErrors | None,
    published: PublishedData | Callable[[], PublishedData] | None,
    catalogue: Catalogue,
) -> tuple[PilotIntervals, str | None]:
    """The pilot interval table for pilots at ``pilot_gpus`` on ``base``, and a note when it was
    measured rather than read: read from ``stored`` when its ``calibration_id`` is ``base``'s,
    else measured on ``published`` (the published measurements, or a function loading them)
    with ``base`` (:func:`~trainscale.calibrate.pilot_series.pilot_errors`)."""
    from trainscale.calibrate.pilot_series import pilot_errors, pilot_interval_model
    from trainscale.errors import TrainscaleError

    if stored is not None and stored.calibration_id == base.calibration_id:
        return stored.intervals(pilot_gpus), None
    if published is None:
        raise TrainscaleError(
            f"no stored pilot errors for the base calibration {base.calibration_id} and no "
            "published measurements to measure them on"
        )
    data = published() if callable(published) else published
    errors = pilot_errors(data, catalogue=catalogue, shipped=base)
    held = "none" if stored is None else f"those of calibration {stored.calibration_id}"
    note = (
        f"the base calibration {base.calibration_id} has no stored pilot errors ({BLOCK}: "
        f"{held}); measured them on the published scaling series ({len(errors)} rows), one base "
        "fit per source"
    )
    return pilot_interval_model(errors, pilot_gpus), note
