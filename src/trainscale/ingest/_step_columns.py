"""The step rows of a text log as typed column arrays, their order checks and the steps table.

:class:`StepColumns` holds the parsed step lines of a 10^6-line log as 8-byte values instead of a
dict per line; :func:`check_order` finds exact repeats (dropped, a warning), conflicting repeats,
steps going backwards and a clock going back (errors naming the file and line), vectorised over
the rows; :func:`frame_from_arrays` and :func:`frame_from_rows` build the table of
:data:`trainscale.schema.STEP_COLUMNS`. Used by :mod:`trainscale.ingest.steplog`.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest._text import parse_timestamps
from trainscale.schema import STEP_COLUMNS, names

__all__ = [
    "FLOAT_COLUMNS",
    "StepColumns",
    "check_order",
    "frame_from_arrays",
    "frame_from_rows",
    "step_time_s",
]

#: The float64 columns of the steps table (seconds, tokens/s per GPU, TFLOP/s, GiB, W, J).
FLOAT_COLUMNS = tuple(c.name for c in STEP_COLUMNS if c.dtype == "float64")
#: Step lines whose timestamps are parsed together (one call of :func:`parse_timestamps`).
_CHUNK_ROWS = 65_536
#: The columns a text log fills, as float64 (``global_batch`` too, whole numbers or NaN).
_TEXT_COLUMNS = (*FLOAT_COLUMNS, "global_batch")


@dataclass(slots=True)
class StepColumns:
    """The parsed step lines of a text log as typed arrays: 8 bytes per value, so a 10^6-line
    log holds ~90 MB here instead of a dict and the line's text per row. Each line's text is
    kept as its hash only, for the exact-duplicate check of :func:`check_order` (two
    different lines of one step with equal 64-bit hashes would be taken for a repeat)."""

    step: array = field(default_factory=lambda: array("q"))
    line: array = field(default_factory=lambda: array("q"))
    text_hash: array = field(default_factory=lambda: array("q"))
    stamp_ns: array = field(default_factory=lambda: array("q"))
    values: dict[str, array] = field(default_factory=lambda: {c: array("d") for c in _TEXT_COLUMNS})
    pending_stamps: list[tuple[str, ...] | None] = field(default_factory=list)

    def add(self, row: dict, number: int, text: str, stamp: tuple[str, ...] | None) -> None:
        self.step.append(row["step"])
        self.line.append(number)
        self.text_hash.append(hash(text))
        for column, values in self.values.items():
            values.append(row.get(column, math.nan))
        self.pending_stamps.append(stamp)
        if len(self.pending_stamps) >= _CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        """Parse the pending timestamps into :attr:`stamp_ns` (NaT as int64 min)."""
        if self.pending_stamps:
            parsed = parse_timestamps(self.pending_stamps).to_numpy().view(np.int64)
            self.stamp_ns.extend(parsed)
            self.pending_stamps.clear()

    def arrays(self) -> dict[str, np.ndarray]:
        self.flush()
        out = {
            "step": np.frombuffer(self.step, dtype=np.int64),
            "line": np.frombuffer(self.line, dtype=np.int64),
            "text_hash": np.frombuffer(self.text_hash, dtype=np.int64),
            "timestamp": np.frombuffer(self.stamp_ns, dtype=np.int64).view("datetime64[ns]"),
        }
        return out | {c: np.frombuffer(v, dtype=np.float64) for c, v in self.values.items()}


def check_order(rows: dict[str, np.ndarray], path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Which rows to keep (exact repeats dropped) and the warnings; raise on conflicting
    repeats, steps going backwards or timestamps going back (see the module docstring).

    Vectorised over the rows, the first problem down the file is raised, as a line-by-line
    pass would: a row whose step an earlier row had is a repeat (exact when its text hash is
    the first row's of that step, else a conflict); every other row must not go back from the
    previous such row, in step or in time."""
    step, line, stamp = rows["step"], rows["line"], rows["timestamp"]
    _, first_of_step, which = np.unique(step, return_index=True, return_inverse=True)
    first = first_of_step[which]  # each row's first row of its step
    repeat = first != np.arange(len(step))
    conflict = repeat & (rows["text_hash"] != rows["text_hash"][first])
    new = np.flatnonzero(~repeat)
    back = np.zeros(len(step), dtype=bool)
    clock = np.zeros(len(step), dtype=bool)
    back[new[1:]] = step[new[1:]] < step[new[:-1]]
    with np.errstate(invalid="ignore"):
        clock[new[1:]] = stamp[new[1:]] < stamp[new[:-1]]  # NaT compares False
    previous = np.full(len(step), -1)
    previous[new[1:]] = new[:-1]
    bad = np.flatnonzero(conflict | back | clock)
    if bad.size:
        _raise_order(int(bad[0]), rows, first, previous, conflict, back, path)
    keep = ~repeat
    notes: list[str] = []
    repeated = line[repeat].tolist()
    if repeated:
        shown = ", ".join(map(str, repeated[:10])) + (" …" if len(repeated) > 10 else "")
        notes.append(
            f"{path}:{repeated[0]}: {len(repeated)} exact duplicate step line(s) dropped "
            f"(line(s) {shown})"
        )
    kept_steps, kept_lines = step[keep], line[keep]
    gaps = np.diff(kept_steps)[1:]  # the first interval may differ (step 1, then every N)
    if gaps.size:
        values, counts = np.unique(gaps, return_counts=True)
        usual = int(values[np.argmax(counts)])
        uneven = [int(kept_lines[k + 2]) for k in np.flatnonzero(gaps != usual)[:10]]
        if uneven:
            notes.append(
                f"{path}:{uneven[0]}: step numbers advance unevenly (usually by {usual}) at "
                f"line(s) {', '.join(map(str, uneven))}: a step line may be missing"
            )
    return keep, notes


def _raise_order(
    i: int,
    rows: dict[str, np.ndarray],
    first: np.ndarray,
    previous: np.ndarray,
    conflict: np.ndarray,
    back: np.ndarray,
    path: str | Path,
) -> None:
    """Raise the order problem of row ``i`` (see :func:`check_order`)."""
    step, line, stamp = rows["step"], rows["line"], rows["timestamp"]
    if conflict[i]:
        raise InputFileError(
            path,
            f"step {step[i]} is logged again with different values (first at line "
            f"{line[first[i]]}); one run per log file, one rank's lines only",
            line=int(line[i]),
        )
    j = previous[i]
    if back[i]:
        raise InputFileError(
            path,
            f"step {step[i]} comes after step {step[j]} (line {line[j]}): step numbers must "
            "increase down the file (shuffled lines, or a restarted job appended to its log?)",
            line=int(line[i]),
        )
    raise InputFileError(
        path,
        f"the clock goes back: step {step[i]} is stamped {pd.Timestamp(stamp[i])}, before step "
        f"{step[j]} at {pd.Timestamp(stamp[j])} (line {line[j]}); timestamps must not decrease",
        line=int(line[i]),
    )


def frame_from_arrays(rows: dict[str, np.ndarray]) -> pd.DataFrame:
    """The steps table of a text log's columns (:class:`StepColumns`), built in one go (each
    intermediate copy of a 10^6-row table is ~100 MB)."""
    batch = pd.Series(rows["global_batch"]).round().astype("Float64")
    columns = {
        "step": rows["step"],
        "line": pd.array(rows["line"], dtype="Int64"),
        "timestamp": rows["timestamp"],
        **{column: rows[column] for column in FLOAT_COLUMNS},
        "global_batch": pd.array(batch, dtype="Int64"),
    }
    return pd.DataFrame({name: columns[name] for name in names(STEP_COLUMNS)}, copy=False)


def frame_from_rows(rows: list[dict], timestamps: pd.Series) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    out = pd.DataFrame(
        {
            "step": frame["step"].astype(np.int64),
            "line": pd.array(
                frame["line"] if "line" in frame else [pd.NA] * len(frame), dtype="Int64"
            ),
            "timestamp": timestamps.to_numpy(),
        }
    )
    for column in FLOAT_COLUMNS:
        out[column] = frame[column].astype(np.float64) if column in frame else np.nan
    batch = frame["global_batch"] if "global_batch" in frame else pd.Series(np.nan, frame.index)
    out["global_batch"] = pd.array(batch.round().astype("Float64"), dtype="Int64")
    return out[names(STEP_COLUMNS)]


def step_time_s(timestamps: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """torchtitan: seconds between consecutive parsed lines / steps between them (NaN for the
    first line, without timestamps, or where time or step does not advance)."""
    seconds = pd.Series(timestamps).diff().dt.total_seconds()
    delta_steps = pd.Series(steps).diff()
    valid = (seconds > 0) & (delta_steps > 0)
    return (seconds / delta_steps).where(valid).to_numpy(dtype=np.float64)
