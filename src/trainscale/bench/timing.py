"""The harness's clock and its summary of the timed steps.

A step's wall time is ``time.perf_counter()`` at its end — after ``torch.cuda.synchronize`` on
CUDA — minus the previous step's end, so consecutive steps tile the run: the logging of a step
is paid by the next one, and the steady-state window (after the warm-up) is exactly the sum of
its steps (torchtitan's ``time_delta`` convention). The summary (the manifest's
``harness_timing``) is computed from that window on rank 0: ``tokens_per_s`` = tokens trained by
the job ÷ the window's wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainscale.bench.config import BenchPlan
from trainscale.bench.device import DeviceInfo

__all__ = ["StepClock", "StepRates", "harness_timing", "significant"]


class StepClock:
    """Step ends on one clock, and the start of the timed window (after the warm-up)."""

    def __init__(self, device: torch.device, *, warmup_steps: int) -> None:
        """Start the clock (the end of "step 0"), after the device's queued work."""
        self._device = device
        self._warmup_steps = warmup_steps
        self._sync()
        self.last_end = time.perf_counter()
        """The latest step's end (``perf_counter`` seconds)."""
        self.window_start: float | None = self.last_end if warmup_steps == 0 else None
        """The timed window's start: the last warm-up step's end; None until then."""

    def _sync(self) -> None:
        if self._device.type == "cuda":
            torch.cuda.synchronize(self._device)

    def lap(self, step: int) -> float:
        """End step ``step`` (1-based); return its wall time, seconds."""
        self._sync()
        now = time.perf_counter()
        step_time = now - self.last_end
        self.last_end = now
        if step == self._warmup_steps:
            self.window_start = now
        return step_time

    @property
    def window_s(self) -> float:
        """Wall time of the timed window so far, seconds."""
        assert self.window_start is not None  # warmup_steps < steps (BenchConfig)
        return self.last_end - self.window_start


@dataclass(frozen=True, slots=True)
class StepRates:
    """One step's throughput as the step line logs it."""

    tps: float
    """Tokens per second per rank (a tensor-parallel group shares its tokens)."""
    tflops: float
    """Model TFLOP/s per rank."""
    mfu_pct: float
    """Model FLOPs utilisation, % of the device's dense peak; 0 where the peak is unknown."""

    @classmethod
    def of(
        cls,
        *,
        tokens_per_rank: int,
        step_time_s: float,
        tp: int,
        flops_per_token: float,
        peak_flops_per_s: float | None,
    ) -> StepRates:
        """The rates of a step of ``step_time_s`` seconds."""
        tps = tokens_per_rank / (step_time_s * tp)
        return cls(
            tps=tps,
            tflops=flops_per_token * tps / 1e12,
            mfu_pct=100 * flops_per_token * tps / peak_flops_per_s if peak_flops_per_s else 0.0,
        )


def significant(value: float) -> float:
    """Six significant digits (the manifest is read by people as well)."""
    return float(f"{value:.6g}")


def harness_timing(
    timed: list[float],
    elapsed_s: float,
    *,
    plan: BenchPlan,
    info: DeviceInfo,
    world_size: int,
    flops_per_token: float,
    n_params: int,
) -> dict[str, Any]:
    """The manifest's ``harness_timing`` of the timed steps' wall times (``timed``, seconds) and
    the window's wall time ``elapsed_s`` (their sum on one clock)."""
    tokens = plan.tokens_per_step * len(timed)
    median = float(np.median(timed))
    peak = info.peak_flops_per_s
    return {
        "tokens_per_s": significant(tokens / elapsed_s),
        "tokens_per_s_per_gpu": significant(tokens / elapsed_s / world_size),
        "tokens_per_s_median": significant(plan.tokens_per_step / median),
        "step_time_s": significant(elapsed_s / len(timed)),
        "step_time_s_median": significant(median),
        "step_time_s_iqr": significant(float(np.subtract(*np.percentile(timed, [75, 25])))),
        "elapsed_s": significant(elapsed_s),
        "steps": len(timed),
        "tokens": tokens,
        "peak_tflops_per_device": significant(peak / 1e12) if peak else None,
        "model_flops_per_token": significant(flops_per_token),
        "params": int(n_params),
    }
