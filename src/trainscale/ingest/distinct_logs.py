"""Power logs of one job are distinct: never one file twice, never one GPU's samples twice.

A job's power is the mean over the GPUs of all its power logs, so a log counted twice weighs its
GPUs twice (and doubles the GPU coverage), and two logs holding the same GPUs at the same times
are averaged into one value that neither measured. The rule, for every pair of a job's power
logs:

- the same file (by resolved path, or by device and inode: a symlink or hard link) listed twice
  is an error;
- the same samples (same timestamp, GPU index and power) in both is an error: one is a copy;
- the same GPU index at the same timestamp in both is an error when the job runs on one node
  (``num_gpus`` ≤ ``gpus_per_node``): one node's GPU 3 cannot have two readings at once. On
  several nodes each node's log counts its GPUs from 0, so only copies are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from trainscale.errors import InputFileError
from trainscale.io.outputs import same_file

__all__ = ["COPY_FRACTION", "check_distinct_power_logs"]

#: Two logs sharing more than this fraction of the smaller one's samples, value for value, are
#: one log twice.
COPY_FRACTION = 0.5


def _keys(samples: pd.DataFrame, *, with_power: bool) -> set[tuple[Any, ...]]:
    columns = ["timestamp", "gpu_index", *(["power_w"] if with_power else [])]
    timed = samples.dropna(subset=columns)
    return set(timed[columns].itertuples(index=False, name=None))


def check_distinct_power_logs(frames: list[pd.DataFrame], cfg: dict[str, Any]) -> None:
    """Raise :class:`InputFileError` for two of a job's power logs that are one file, copies,
    or (on one node) hold one GPU at one time. Each frame is one log's samples
    (``timestamp``, ``gpu_index``, ``power_w``, ``line``) with ``log_file``."""
    one_node = bool(cfg.get("num_gpus")) and int(cfg["num_gpus"]) <= int(
        cfg.get("gpus_per_node") or 8
    )
    for i, first in enumerate(frames):
        a = Path(first["log_file"].iloc[0])
        for second in frames[i + 1 :]:
            b = Path(second["log_file"].iloc[0])
            if same_file(a, b):
                raise InputFileError(b, f"is {a} again: each power log may be listed once per job")
            shared = _keys(first, with_power=True) & _keys(second, with_power=True)
            smaller = min(len(_keys(first, with_power=True)), len(_keys(second, with_power=True)))
            if smaller and len(shared) > COPY_FRACTION * smaller:
                raise InputFileError(
                    b,
                    f"holds the same samples as {a} ({len(shared):,} of {smaller:,} identical "
                    "timestamp, GPU and power): a copy of one log counts its GPUs twice; list "
                    "each log once",
                )
            clash = _keys(first, with_power=False) & _keys(second, with_power=False)
            if one_node and clash:
                stamp, gpu = min(clash)
                raise InputFileError(
                    b,
                    f"GPU {gpu:g} at {stamp} is in {a} too, and the job runs on one node "
                    f"({cfg.get('num_gpus')} GPUs): two readings of one GPU at one time would "
                    "be averaged; give one log per node",
                )
