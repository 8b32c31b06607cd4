"""The rules that drop rows of a study's grid, and :func:`expand_block`, which applies them.

In order: ``derive`` (fills ``global_batch``; drops rows where the derived value is not a whole
number), the cheap filters (``max_model_parallel``, ``max_tp_per_node``), the simulator's
validator (:func:`trainscale.sim.configs.build_configs`, ``"auto"`` micro-batches checked as 1)
and, with ``filters.fits_memory``, a prediction of the block's memory per GPU. Each rule returns
``(row, column, reason)`` triples: ``row`` is the position in the block, ``column`` the study
key (``derive.…``, ``filters.…``) or configuration column that dropped it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.degrees import data_parallel_degree
from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.simulate import predict_configurations
from trainscale.study.spec import Study

__all__ = ["expand_block"]


def _int_column(frame: pd.DataFrame, name: str, default: int) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), default, dtype=np.int64)
    return frame[name].fillna(default).to_numpy(dtype=np.int64)


def _derive(study: Study, grid: pd.DataFrame) -> list[tuple[int, str, str]]:
    """Fill ``global_batch`` from ``derive``; return the rows that cannot be derived."""
    problems: list[tuple[int, str, str]] = []
    if not study.derive:
        return problems
    ((key, value),) = study.derive.items()
    if key == "global_batch_tokens":
        seq_len = grid["seq_len"].to_numpy(dtype=np.int64)
        ok = value % seq_len == 0
        grid["global_batch"] = pd.array(np.where(ok, value // seq_len, 0), dtype="Int64")
        problems += [
            (int(r), "derive.global_batch_tokens",
             f"global_batch_tokens {value} is not divisible by seq_len {seq_len[r]}")
            for r in np.flatnonzero(~ok)
        ]  # fmt: skip
    else:  # sequences_per_dp_rank
        num_gpus = grid["num_gpus"].to_numpy(dtype=np.int64)
        tp, pp = grid["tp"].to_numpy(dtype=np.int64), grid["pp"].to_numpy(dtype=np.int64)
        cp = _int_column(grid, "cp", 1)
        dp = data_parallel_degree(num_gpus, tp, pp, cp)
        ok = dp > 0
        grid["global_batch"] = pd.array(value * dp, dtype="Int64")
        problems += [
            (int(r), "derive.sequences_per_dp_rank",
             f"dp = num_gpus / (tp·pp·cp) = {num_gpus[r]} / ({tp[r]}·{pp[r]}·{cp[r]}) is not a "
             "whole number")
            for r in np.flatnonzero(~ok)
        ]  # fmt: skip
    return problems


def _filter(
    study: Study, grid: pd.DataFrame, candidates: np.ndarray, hardware: HardwareCatalog
) -> list[tuple[int, str, str]]:
    """Rows among ``candidates`` that a filter drops, with the reason."""
    problems: list[tuple[int, str, str]] = []
    tp = grid["tp"].to_numpy(dtype=np.int64)
    limit = study.filters.max_model_parallel
    if limit is not None:
        pp, cp = grid["pp"].to_numpy(dtype=np.int64), _int_column(grid, "cp", 1)
        degree = tp * pp * cp
        problems += [
            (int(r), "filters.max_model_parallel",
             f"tp·pp·cp = {tp[r]}·{pp[r]}·{cp[r]} = {degree[r]} exceeds max_model_parallel "
             f"{limit}")
            for r in candidates[degree[candidates] > limit]
        ]  # fmt: skip
    if study.filters.max_tp_per_node:
        names, where = np.unique(grid["gpu"].astype(str).to_numpy(), return_inverse=True)
        default = np.array([hardware.system_for(g).gpus_per_node for g in names],
                           dtype=np.int64)[where]  # fmt: skip
        per_node = _int_column(grid, "gpus_per_node", 0)
        per_node = np.where(per_node > 0, per_node, default)
        problems += [
            (int(r), "filters.max_tp_per_node",
             f"tp {tp[r]} exceeds the {per_node[r]} GPUs per node (tensor parallelism would "
             "span nodes)")
            for r in candidates[tp[candidates] > per_node[candidates]]
        ]  # fmt: skip
    return problems


def _fits_memory(
    study: Study, kept: pd.DataFrame, catalogue: Catalogue, calibration: Calibration
) -> list[tuple[int, str, str]]:
    """Rows of ``kept`` (valid rows) whose predicted memory per GPU does not fit, with the
    reason: the block is simulated as its chunk will be (``"auto"`` resolved first)."""
    if not study.filters.fits_memory or kept.empty:
        return []
    results = predict_configurations(kept, catalogue=catalogue, calibration=calibration)
    fits = results["fits_memory"].to_numpy(dtype=bool)
    memory = results["mem_gib_per_gpu"].to_numpy(dtype=float)
    names, where = np.unique(results["gpu"].astype(str).to_numpy(), return_inverse=True)
    hbm = {g: catalogue.hardware.gpus[g].hbm_bytes / 2**30 for g in names}
    gpus = names[where]
    return [
        (int(r), "filters.fits_memory",
         f"predicted {memory[r]:.1f} GiB per GPU does not fit in the usable memory of "
         f"{gpus[r]} ({hbm[gpus[r]]:.0f} GiB)")
        for r in np.flatnonzero(~fits).tolist()
    ]  # fmt: skip


def expand_block(
    study: Study,
    block: pd.DataFrame,
    *,
    first: int = 0,
    catalogue: Catalogue,
    calibration: Calibration,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Derive and filter one block of the grid (from :func:`~trainscale.study.grid.grid_blocks`);
    return ``(configurations, rejects)`` as :func:`~trainscale.study.expand.expand_study` does,
    ``row`` = ``first`` + position.

    Rows are dropped, in this order, by ``derive``, the cheap filters (``max_model_parallel``,
    ``max_tp_per_node``), the simulator's validator (``"auto"`` checked as 1) and, with
    ``filters.fits_memory``, by a prediction of the block's memory per GPU under
    ``catalogue`` and ``calibration``.
    """
    hardware = catalogue.hardware
    grid = block.reset_index(drop=True)
    invalid = _derive(study, grid)
    candidates = np.setdiff1d(np.arange(len(grid)), [r for r, _, _ in invalid])
    filtered = _filter(study, grid, candidates, hardware)
    candidates = np.setdiff1d(candidates, [r for r, _, _ in filtered])
    check = grid.iloc[candidates].reset_index(drop=True)
    if "micro_batch" in check.columns:
        check["micro_batch"] = check["micro_batch"].fillna(1)
    _, _, rejected = build_configs(
        check, origin=study.path, skip_invalid=True, hardware=hardware,
        models=catalogue.models, frameworks=catalogue.frameworks,
    )  # fmt: skip
    invalid += [
        (int(candidates[row]), str(column), str(reason))
        for row, column, reason in zip(rejected["row"].tolist(), rejected["column"].tolist(),
                                       rejected["reason"].tolist(), strict=True)
    ]  # fmt: skip
    if invalid and not study.filters.drop_invalid:
        problems = sorted(((r + first, c, m) for r, c, m in invalid), key=lambda p: p[0])
        raise ConfigurationError(problems, origin=study.path)
    candidates = np.setdiff1d(candidates, [r for r, _, _ in invalid])
    memory = _fits_memory(study, grid.iloc[candidates].reset_index(drop=True), catalogue,
                          calibration)  # fmt: skip
    filtered += [(int(candidates[r]), column, reason) for r, column, reason in memory]
    problems = sorted(invalid + filtered, key=lambda p: p[0])
    dropped = np.zeros(len(grid), dtype=bool)
    dropped[[row for row, _, _ in problems]] = True
    configurations = grid[~dropped].reset_index(drop=True)
    rejects = grid.iloc[[row for row, _, _ in problems]].reset_index(drop=True)
    rejects["row"] = pd.array([row + first for row, _, _ in problems], dtype="Int64")
    rejects["column"] = pd.array([column for _, column, _ in problems], dtype="string")
    rejects["reason"] = pd.array([reason for _, _, reason in problems], dtype="string")
    return configurations, rejects
