"""Node power logs from a PDU or a BMC (IPMI, Redfish): one CSV, one reading per line.

Format (header required; other columns are ignored):

- ``timestamp``: when the reading was taken, ISO 8601 (``2026-03-01T12:00:05Z``, with or without
  an offset; all readings of a file in one convention) or seconds since the Unix epoch;
- ``node``: the node's name (hostname or BMC address), one series per name;
- ``power_w``: the node's input power at that moment, watts (AC at the wall). Where it comes
  from: Redfish ``GET /redfish/v1/Chassis/<id>/Power`` → ``PowerControl[0].PowerConsumedWatts``
  (DMTF Redfish schema ``Power``); IPMI ``ipmitool dcmi power reading`` → "Instantaneous power
  reading"; a metered PDU outlet's active power.

:func:`node_power_w` averages each node's readings (inside a window, if given), then the nodes:
mean node power, W per node, the quantity ``measured_node_power_w`` of a measurement table and
of ``data/published/power-measurements.csv``'s ``node_power_w_avg`` rows (MLPerf's power logs
hold the same readings, ``power_reading`` per node). A file without a header, a missing column,
a reading that is not a positive number below :data:`MAX_NODE_W`, a timestamp that is neither,
or no reading in the window is an :class:`~trainscale.errors.InputFileError` naming the file and
line.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from trainscale.errors import InputFileError

__all__ = ["COLUMNS", "MAX_NODE_W", "NodePower", "node_power_w"]

#: The columns a node-power log needs.
COLUMNS = ("timestamp", "node", "power_w")
#: Largest plausible node reading, W (a GB200 NVL72 rack is about 130 kW; one node far less).
MAX_NODE_W = 200_000.0


@dataclass(frozen=True)
class NodePower:
    """Mean node power of a log: ``mean_w`` (W per node), the ``nodes`` and ``readings`` used."""

    mean_w: float
    nodes: int
    readings: int


def _seconds(text: str, path: Path, line: int) -> float:
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputFileError(
            path, f"line {line}: timestamp {text!r} is neither ISO 8601 nor seconds since the "
            "epoch"
        ) from None  # fmt: skip


def _reading(text: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_NODE_W):
        raise InputFileError(
            path, f"line {line}: power_w {text!r} is not a node power in (0, {MAX_NODE_W:g}] W"
        )
    return value


def node_power_w(path: Path, start: float | None = None, end: float | None = None) -> NodePower:
    """Mean node power of the log at ``path``, readings with ``start <= t <= end`` (seconds
    since the epoch; None: unbounded)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle, strict=True)
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputFileError(
                    path, f"line 1: missing column(s) {', '.join(missing)}; a node-power log has "
                    f"{', '.join(COLUMNS)} (docs/ingest/node-power-logs.md)"
                )  # fmt: skip
            series: dict[str, list[float]] = {}
            for line, row in enumerate(reader, start=2):
                t = _seconds(row["timestamp"] or "", path, line)
                value = _reading(row["power_w"] or "", path, line)
                if (start is None or t >= start) and (end is None or t <= end):
                    series.setdefault((row["node"] or "").strip(), []).append(value)
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        raise InputFileError(path, f"cannot read: {error}") from error
    if not series:
        raise InputFileError(path, "no reading inside the window" if start or end
                             else "no reading")  # fmt: skip
    means = [float(np.mean(v)) for _, v in sorted(series.items())]
    return NodePower(float(np.mean(means)), len(means), sum(len(v) for v in series.values()))
