"""Plausibility checks on measured values before they enter the dataset.

A measured row is the one a user trusts most and calibration learns from, so a value no cluster
can produce (a wrong unit, a log of another job, a GPU missing from the power log) must not pass
as a measurement. Each check either raises :class:`~trainscale.errors.InputFileError` (an
impossible value) or returns a warning (a suspicious one) that the caller prints and keeps in
the row's ``warnings`` column; ``strict`` ingestion turns the warnings into errors.

The bounds (documented in ``docs/ingest/checks.md``):

- MFU and HFU: at most 1 (100 %) — error; below :data:`MFU_FLOOR` — warning.
- Logged per-step MFU: 0 to 1; logged TFLOP/s per GPU: 0 to the GPU's catalogue peak for the
  run's precision (× 1 + :data:`PEAK_TOLERANCE`) — error naming the line.
- Power per GPU: a GPU whose median reading is below the catalogue's ``idle_w``
  (:data:`IDLE_FLOOR_FRACTION` = 1) is an error (0 W, or kW/mW values in a W column); a
  reading at 0 W while another GPU of the same poll draws at least ``idle_w`` is a warning; a
  reading above the TDP × (1 + :data:`TDP_TOLERANCE`) is an error.
- Coverage: a GPU index at or beyond the job's ``num_gpus`` is an error; fewer distinct GPUs
  logged (over all power logs of the job) than ``num_gpus`` is a warning.
- Conflicting duplicate samples (same timestamp and GPU, different power) are an error.
- Memory: a per-step or steady memory above the GPU's HBM × (1 + :data:`HBM_TOLERANCE`) is an
  error.
- Manifest against log: a logged global batch that differs from the manifest's is an error; a
  logged step time whose median differs from the median time between step stamps (per step),
  or logged per-GPU tokens/s × ``num_gpus`` × step time that differs from the manifest's
  ``global_batch × seq_len``, by more than the log's own agreement is an error
  (:func:`agreement`: the spread of the per-step ratios, at least :data:`MIN_AGREEMENT`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.ingest.batch_ramp import batch_ramp

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import Gpu

__all__ = [
    "HBM_TOLERANCE",
    "IDLE_FLOOR_FRACTION",
    "MFU_FLOOR",
    "MIN_AGREEMENT",
    "PEAK_TOLERANCE",
    "TDP_TOLERANCE",
    "agreement",
    "check_logged_peaks",
    "check_power_ceiling",
    "check_power_coverage",
    "check_power_samples",
    "check_result_row",
    "check_steps",
]

#: Measured MFU below this fraction (0.5 %) is a warning: a step time written in ms as s, or a
#: run that mostly waited. The slowest shipped GPU run (Megatron golden values, a 12-layer
#: hidden-512 GPT on 8 H100) measures 2.2 %.
MFU_FLOOR = 0.005
#: A GPU whose median power is below this fraction of the catalogue's ``idle_w`` (the draw at
#: 0 % utilisation with a context held) cannot be running the job: a 0 W reading, a value in kW
#: (0.6 for 600 W) or a value written without a context. A training GPU spends most of the
#: run computing, so its median is above the idle draw.
IDLE_FLOOR_FRACTION = 1.0
#: A logged TFLOP/s per GPU above the catalogue peak (dense, the run's precision) by more than
#: this fraction is an error (allows the rounding of the printed value, not a unit or scale).
PEAK_TOLERANCE = 0.01
#: Two estimates of one quantity from a log and its manifest agree within the log's own spread,
#: and never need to agree closer than this factor (the rounding of printed values, tokens/s
#: over a logging window that is not exactly one step).
MIN_AGREEMENT = 1.10
#: Memory above the catalogue HBM by more than this fraction is an error (allows rounding of the
#: stated capacity, not a unit mistake).
HBM_TOLERANCE = 0.05
#: Fewer step stamps than this leave the stamp-based step time unchecked.
_MIN_TIMED_STEPS = 3
#: Power readings above the GPU's TDP (catalogue ``tdp_w``) by more than this fraction are an
#: error: nvidia-smi's ``power.draw`` averages over about a second and stays near the power
#: limit; 25 % allows short excursions and instantaneous readings, not a wrong unit or scale.
TDP_TOLERANCE = 0.25


def _refuse_above(
    rows: pd.DataFrame, column: str, limit: float, path: str | Path, what: str, unit: str
) -> None:
    """Raise on the first value of ``rows[column]`` above ``limit`` (NaN is not), naming its line:
    ``<what-start> <value> <unit> <what-rest>; allowed: 0 to <limit> <unit>``, where ``what``
    holds ``{value}`` for the value."""
    high = np.flatnonzero((rows[column] > limit).to_numpy(dtype=bool))
    if not high.size:
        return
    k = int(high[0])
    value = f"{rows[column].iloc[k]:g} {unit}"
    raise InputFileError(
        path, f"{what.format(value=value)}; allowed: 0 to {limit:g} {unit}", line=_line(rows, k)
    )


def check_power_ceiling(
    samples: pd.DataFrame, path: str | Path, gpu: Gpu | None, gpu_name: str
) -> None:
    """Raise on the first reading above what the GPU can draw (TDP × (1 + :data:`TDP_TOLERANCE`));
    nothing to check without a catalogue GPU. ``samples`` as for :func:`check_power_samples`."""
    if gpu is None:
        return
    what = (
        f"power {{value}} is above what a {gpu_name} can draw (TDP {gpu.tdp_w:g} W + "
        f"{TDP_TOLERANCE:.0%}, data/hardware.yaml)"
    )
    _refuse_above(samples, "power_w", gpu.tdp_w * (1 + TDP_TOLERANCE), path, what, "W")


def check_power_samples(
    samples: pd.DataFrame, path: str | Path, gpu: Gpu | None, gpu_name: str
) -> list[str]:
    """Check one power log's samples; raise on an impossible value, return warnings.

    ``samples`` has the columns of :attr:`trainscale.ingest.power_samples.PowerLog.samples`
    (``sample``, ``timestamp``, ``gpu_index``, ``power_w`` in W, ``line``).
    """
    notes: list[str] = []
    power = samples[samples["power_w"].notna()]
    if power.empty:
        return notes
    _check_duplicates(power, path)
    by_gpu = power.groupby("gpu_index")["power_w"].median()
    if gpu is not None:
        floor = gpu.idle_w * IDLE_FLOOR_FRACTION
        low = by_gpu[by_gpu < floor]
        if len(low):
            index = low.index[0]
            line = int(power.loc[power["gpu_index"] == index, "line"].iloc[0])
            raise InputFileError(
                path,
                f"GPU {index} draws a median {low.iloc[0]:g} W, below the idle draw of a "
                f"{gpu_name} (idle_w {floor:g} W, data/hardware.yaml): a GPU at 0 W or not in "
                "the job, or power in kW or mW in a [W] column? "
                f"allowed: {floor:g} to {gpu.tdp_w * (1 + TDP_TOLERANCE):g} W",
                line=line,
            )
        busy = gpu.idle_w
    else:
        busy = float(power["power_w"].max()) / 2
    peak = power.groupby("sample")["power_w"].transform("max")
    zero = np.flatnonzero(((power["power_w"] <= 0) & (peak >= busy) & (busy > 0)).to_numpy())
    if zero.size:
        k = zero[0]
        notes.append(
            f"{path}:{int(power['line'].iloc[k])}: {zero.size} reading(s) of 0 W while another "
            f"GPU of the same poll draws {busy:g} W or more, first GPU "
            f"{power['gpu_index'].iloc[k]}"
        )
    return notes


def _check_duplicates(power: pd.DataFrame, path: str | Path) -> None:
    """Same (timestamp, GPU) with different power is an error; identical copies are kept."""
    timed = power[power["timestamp"].notna() & power["gpu_index"].notna()]
    if timed.empty:
        return
    spread = timed.groupby(["timestamp", "gpu_index"])["power_w"].agg(["min", "max"])
    bad = spread[spread["max"] != spread["min"]]
    if len(bad):
        stamp, index = bad.index[0]
        rows = timed[(timed["timestamp"] == stamp) & (timed["gpu_index"] == index)]
        lines = ", ".join(str(int(n)) for n in rows["line"])
        raise InputFileError(
            path,
            f"conflicting duplicate samples: GPU {index} at {stamp} reads "
            f"{bad['min'].iloc[0]:g} W and {bad['max'].iloc[0]:g} W (lines {lines}); "
            "one sample per GPU and time is allowed (two loggers writing one file?)",
            line=int(rows["line"].iloc[1]),
        )


def check_power_coverage(
    frames: list[pd.DataFrame], num_gpus: int | None, manifest: str | Path
) -> list[str]:
    """Every GPU of the job in the power logs: an index at or beyond ``num_gpus`` is an error,
    fewer GPUs logged than ``num_gpus`` a warning. Each frame is one log's samples with
    ``log_file``; GPU indices are those of the log (a node's log counts 0…7)."""
    if not frames or not num_gpus:
        return []
    logged = 0
    for samples in frames:
        indices = samples.loc[samples["power_w"].notna(), "gpu_index"].dropna().astype(int)
        path = samples["log_file"].iloc[0]
        beyond = indices[indices >= num_gpus]
        if len(beyond):
            k = beyond.index[0]
            raise InputFileError(
                path,
                f"power logged for GPU {beyond.iloc[0]}, but the job has {num_gpus} GPU(s) "
                f"(num_gpus, {manifest}): a log of another job or of the whole node? allowed "
                f"GPU indices: 0 to {num_gpus - 1}",
                line=int(samples.loc[k, "line"]),
            )
        logged += indices.nunique()
    if logged < num_gpus:
        return [
            f"power logged for {logged} of the job's {num_gpus} GPUs ({manifest}): "
            "power_w_per_gpu is the mean of the logged ones"
        ]
    return []


def check_steps(
    steps: pd.DataFrame,
    path: str | Path,
    cfg: dict[str, Any],
    warmup: int,
    gpu: Gpu | None,
    manifest: str | Path,
) -> None:
    """Check a parsed step table (columns of :attr:`trainscale.ingest.steplog.StepLog.steps`,
    before the manifest's ``global_batch`` fills gaps) against the manifest; raise on a
    contradiction."""
    _check_global_batch(steps.iloc[batch_ramp(steps, cfg) :], path, cfg, manifest)
    check_logged_peaks(steps, path, cfg, gpu)
    if gpu is not None and "mem_gib" in steps:
        limit = gpu.hbm_bytes / 2**30 * (1 + HBM_TOLERANCE)
        what = (
            f"memory {{value}} is more than a {cfg.get('gpu')} holds "
            f"(HBM {gpu.hbm_bytes / 2**30:g} GiB, data/hardware.yaml)"
        )
        _refuse_above(steps, "mem_gib", limit, path, what, "GiB")
    steady = steps.iloc[warmup:]
    _check_stamps(steady, path)
    _check_throughput(steady, path, cfg, manifest)


def _line(steps: pd.DataFrame, k: int) -> int | None:
    line = steps["line"].iloc[k] if "line" in steps else None
    return None if line is None or pd.isna(line) else int(line)


def _check_global_batch(
    steps: pd.DataFrame, path: str | Path, cfg: dict[str, Any], manifest: str | Path
) -> None:
    if "global_batch" not in cfg or "global_batch" not in steps:
        return
    logged = pd.to_numeric(steps["global_batch"], errors="coerce")
    other = np.flatnonzero((logged.notna() & (logged != cfg["global_batch"])).to_numpy())
    if other.size:
        k = other[0]
        raise InputFileError(
            path,
            f"the log's global batch size is {logged.iloc[k]:g} but the manifest's "
            f"global_batch is {cfg['global_batch']} ({manifest}): a log of another "
            "configuration?",
            line=_line(steps, k),
        )


def agreement(ratios: np.ndarray) -> float:
    """The factor within which a log's per-step ``ratios`` of two estimates of one quantity
    agree with each other: the 90th over the 10th percentile, at least :data:`MIN_AGREEMENT`.
    A manifest that contradicts the log by more than this factor is wrong, however small."""
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    if ratios.size < 2:
        return MIN_AGREEMENT
    low, high = np.percentile(ratios, [10, 90])
    return max(MIN_AGREEMENT, float(high / low))


def _outside(ratios: np.ndarray) -> tuple[float, float] | None:
    """``(median ratio, allowed factor)`` where the median is outside the log's agreement."""
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    if not ratios.size:
        return None
    median, factor = float(np.median(ratios)), agreement(ratios)
    return None if 1 / factor <= median <= factor else (median, factor)


def _check_stamps(steady: pd.DataFrame, path: str | Path) -> None:
    """Logged step time against the time between step stamps per step."""
    timed = steady[steady["timestamp"].notna() & steady["step_time_s"].notna()]
    if len(timed) < _MIN_TIMED_STEPS:
        return
    seconds = timed["timestamp"].astype("int64").to_numpy() / 1e9
    steps = timed["step"].to_numpy(dtype=float)
    delta = np.diff(seconds) / np.diff(steps)
    logged = timed["step_time_s"].to_numpy(dtype=float)[1:]
    keep = np.isfinite(delta) & (delta > 0)
    if keep.sum() < _MIN_TIMED_STEPS - 1:
        return
    off = _outside(logged[keep] / delta[keep])
    if off is not None:
        raise InputFileError(
            path,
            f"the logged step time (median {float(np.median(logged)):.4g} s) is "
            f"{off[0]:.3g} times the time between step stamps "
            f"({float(np.median(delta[keep])):.4g} s per step): a step time in ms written as "
            f"s, or stamps of another run? allowed: within the log's own agreement, a factor "
            f"{off[1]:.3g}",
            line=_line(timed, 0),
        )


def _check_throughput(
    steady: pd.DataFrame, path: str | Path, cfg: dict[str, Any], manifest: str | Path
) -> None:
    """Logged tokens/s per GPU × num_gpus × step time against global_batch × seq_len."""
    needed = ("global_batch", "seq_len", "num_gpus")
    if not all(cfg.get(k) for k in needed) or "tokens_per_s_per_gpu" not in steady:
        return
    rate = pd.to_numeric(steady["tokens_per_s_per_gpu"], errors="coerce")
    time = pd.to_numeric(steady["step_time_s"], errors="coerce")
    both = (rate.notna() & time.notna()).to_numpy()
    if not both.any():
        return
    stated = float(cfg["global_batch"] * cfg["seq_len"])
    per_step = (rate * time).to_numpy(dtype=float)[both] * cfg["num_gpus"]
    off = _outside(per_step / stated)
    if off is not None:
        raise InputFileError(
            path,
            f"the log's tokens/s per GPU x step time x num_gpus gives "
            f"{float(np.median(per_step)):,.0f} tokens per step but the manifest's "
            f"global_batch x seq_len is {stated:,.0f} ({manifest}), {off[0]:.3g} times: "
            "num_gpus, global_batch or seq_len do not match the log; allowed: within the "
            f"log's own agreement, a factor {off[1]:.3g}",
            line=_line(steady, int(np.flatnonzero(both)[0])),
        )


def check_logged_peaks(
    steps: pd.DataFrame, path: str | Path, cfg: dict[str, Any], gpu: Gpu | None
) -> None:
    """Each logged per-step MFU in 0 to 1 and TFLOP/s per GPU in 0 to the GPU's peak for the
    run's precision (catalogue ``bf16_flops_per_s``, ``fp8_flops_per_s`` for fp8) × (1 +
    :data:`PEAK_TOLERANCE`); raise naming the first line outside."""
    peak = None
    if gpu is not None:
        fp8 = cfg.get("precision") == "fp8" and gpu.fp8_flops_per_s
        peak = (gpu.fp8_flops_per_s if fp8 else gpu.bf16_flops_per_s) / 1e12
    for column, high, what in (
        ("mfu", 1.0, "MFU"),
        ("tflops_per_gpu", None if peak is None else peak * (1 + PEAK_TOLERANCE), "TFLOP/s"),
    ):
        if column not in steps:
            continue
        values = pd.to_numeric(steps[column], errors="coerce")
        bad = (values < 0) | (values > high if high is not None else False) | np.isinf(values)
        hit = np.flatnonzero(bad.to_numpy(dtype=bool))
        if hit.size:
            k = int(hit[0])
            allowed = (
                "0 to 100 %" if column == "mfu" else
                f"0 to {high:g} (the {cfg.get('gpu')} peak {peak:g} TFLOP/s, data/hardware.yaml)"
                if high is not None else "0 or more"
            )  # fmt: skip
            shown = f"{values.iloc[k]:.2%}" if column == "mfu" else f"{values.iloc[k]:g}"
            raise InputFileError(
                path,
                f"logged {what} {shown}{'' if column == 'mfu' else ' per GPU'} is impossible; "
                f"allowed: {allowed}",
                line=_line(steps, k),
            )


def check_result_row(
    row: dict[str, Any], cfg: dict[str, Any], gpu: Gpu | None, manifest: str | Path
) -> list[str]:
    """Check a job's measured row (dataset columns); raise on an impossible value, return
    warnings."""
    where = f"run {row.get('run_id')}" if row.get("run_id") else str(manifest)
    for name in ("mfu", "hfu"):
        value = row.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if not math.isfinite(value) or value > 1:
            raise InputFileError(
                manifest,
                f"measured {name} {value:.4g} ({value:.1%}) is above 100 %: the step time is "
                "too short for the manifest's model, batch and GPU count (a step time in ms "
                "written as s, or a log of another configuration?); allowed: "
                f"{MFU_FLOOR:.1%} to 100 %",
            )
    notes = []
    mfu = row.get("mfu")
    if mfu is not None and not math.isnan(mfu) and mfu < MFU_FLOOR:
        notes.append(
            f"{where}: measured MFU {mfu:.3%} is below the plausible floor {MFU_FLOOR:.1%} "
            "(a step time in s written as ms? the GPU mostly waiting?)"
        )
    mem = row.get("mem_gib_per_gpu")
    if gpu is not None and mem is not None and not math.isnan(mem):
        limit = gpu.hbm_bytes / 2**30 * (1 + HBM_TOLERANCE)
        if mem > limit:
            raise InputFileError(
                manifest,
                f"measured memory {mem:g} GiB per GPU is more than a {cfg.get('gpu')} holds "
                f"(HBM {gpu.hbm_bytes / 2**30:g} GiB); allowed: 0 to {limit:g} GiB",
            )
    return notes
