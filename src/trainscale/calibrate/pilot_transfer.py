"""Does a pilot's level carry to what the pilots did not run? Measured on the published series.

Each published scaling series calibrated on its smallest GPU count
(:func:`trainscale.calibrate.pilot_series.pilot_errors`, its base fitted without its source)
also predicts the **other** rows of its source on the same software stack, at the pilots' GPU
count or more: rows on **another GPU**, rows of **another model** on the same GPU, and rows of
the same model and GPU in **another layout** (tp, pp, cp, vpp, sharding, sequence length,
precision or recomputation). Each row is predicted by the pilot-calibrated calibration and by the
shipped level (the base), as in :func:`pilot_errors`, without the per-GPU level rule of
:mod:`trainscale.sim.levels` (the calibration is applied as fitted, so the comparison measures
whether carrying the level helps). :func:`transfer_evidence` summarises them by relation, every
source weighing the same. Another stack needs no measurement: a level refit moves only the
measured stack's offsets, so its prediction is the shipped one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.calibrate.pilot_reach import source_weighted_mape

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["RELATIONS", "TRANSFER_COLUMNS", "transfer_errors", "transfer_evidence"]

#: What differs between a series' pilots and the predicted row, in the order tested.
RELATIONS = ("another GPU", "another model", "another layout")
#: Columns of :func:`transfer_evidence`.
TRANSFER_COLUMNS = ("relation", "rows", "sources", "pilot_mape_pct", "base_mape_pct", "carried")


def transfer_errors(
    published: PublishedData,
    errors: pd.DataFrame,
    *,
    calibrated: dict[str, Calibration],
    bases: dict[str, Calibration],
    catalogue: Catalogue,
) -> pd.DataFrame:
    """Per (series, other row of its source and stack at the pilots' GPU count or more):
    ``series``, ``citation``, ``relation`` (:data:`RELATIONS`), ``log2_distance``,
    ``pilot_ape_pct``, ``base_ape_pct``. ``errors``: :func:`pilot_errors` rows; ``calibrated``
    and ``bases``: the dicts it filled."""
    from trainscale.calibrate.pilot_series import _predict, scaling_series
    from trainscale.published.accuracy import throughput_predictions

    columns = ["series", "citation", "relation", "log2_distance", "pilot_ape_pct", "base_ape_pct"]
    if not calibrated:
        return pd.DataFrame(columns=columns)
    usable, _ = throughput_predictions(published, next(iter(bases.values())), catalogue)
    rows = published.throughput[published.throughput["csv_row"].isin(usable["csv_row"])]
    rows = rows.assign(series=scaling_series(rows))
    parts = []
    for name in sorted(calibrated):
        mine = rows[rows["series"] == name]
        pilots = mine[mine["num_gpus"] == mine["num_gpus"].min()]
        first = pilots.iloc[0]
        other = rows[
            (rows["citation"] == first["citation"]) & (rows["framework"] == first["framework"])
            & (rows["series"].fillna("") != name) & (rows["num_gpus"] >= first["num_gpus"])
        ]  # fmt: skip
        if other.empty:
            continue
        relation = np.where(
            other["gpu"] != first["gpu"], RELATIONS[0],
            np.where(other["model_name"] != first["model_name"], RELATIONS[1], RELATIONS[2]),
        )  # fmt: skip
        observed = other["observed_tokens_per_s_per_gpu"].to_numpy(np.float64)
        pilot = _predict(other, calibrated[name], catalogue)
        base = _predict(other, bases[str(first["citation"])], catalogue)
        parts.append(pd.DataFrame({
            "series": name, "citation": first["citation"], "relation": relation,
            "log2_distance": np.log2(other["num_gpus"].to_numpy() / first["num_gpus"]),
            "pilot_ape_pct": 100.0 * np.abs(pilot / observed - 1.0),
            "base_ape_pct": 100.0 * np.abs(base / observed - 1.0),
        }))  # fmt: skip
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def transfer_evidence(transfers: pd.DataFrame) -> pd.DataFrame:
    """Per relation (:data:`RELATIONS`): rows, sources, the pilot-calibrated and shipped-level
    MAPE (every source weighing the same) and ``carried`` (the pilot level did better)."""
    out = []
    for relation in RELATIONS:
        part = transfers[transfers["relation"] == relation]
        pilot = source_weighted_mape(part["pilot_ape_pct"], part["citation"])
        base = source_weighted_mape(part["base_ape_pct"], part["citation"])
        out.append({
            "relation": relation, "rows": len(part), "sources": int(part["citation"].nunique()),
            "pilot_mape_pct": pilot, "base_mape_pct": base, "carried": bool(pilot < base),
        })  # fmt: skip
    return pd.DataFrame(out, columns=list(TRANSFER_COLUMNS))
