"""An optional ``torch.profiler`` (Kineto) trace of a few warm-up steps, one file per rank.

The traced steps sit inside the warm-up (see :class:`~trainscale.bench.config.BenchConfig`
``profile_steps``): ``skip_first`` steps, one profiler warm-up step, ``profile_steps`` recorded
steps, then the trace is written (gzip JSON, ``traces/trace_rank<r>.json.gz``) while one clean
warm-up step remains, so the profiler's overhead never reaches the timed steps.

Each recorded step is a ``ProfilerStep#N`` annotation. HolisticTraceAnalysis, and
:func:`trainscale.ingest.kineto.load_traces`, drop the last one as possibly truncated, so
``profile_steps`` = 3 gives two complete steps to analyse.
"""

from __future__ import annotations

from pathlib import Path

import torch

__all__ = ["TraceWindow"]


class TraceWindow:
    """Drives ``torch.profiler.profile`` over a fixed window of training steps."""

    def __init__(self, path: Path, *, profile_steps: int, warmup_steps: int, cuda: bool) -> None:
        """Start the profiler; call :meth:`step` at the end of every training step.

        Parameters
        ----------
        path
            Trace file to write (``.json.gz``).
        profile_steps
            Steps to record (>= 1).
        warmup_steps
            The run's warm-up steps (>= ``profile_steps + 2``).
        cuda
            Record CUDA kernels as well as CPU operators.
        """
        if profile_steps < 1 or warmup_steps < profile_steps + 2:
            raise ValueError(
                f"profile_steps {profile_steps} needs warmup_steps >= {profile_steps + 2}"
            )
        self.path = Path(path)
        self.written = False
        activities = [torch.profiler.ProfilerActivity.CPU]
        if cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        schedule = torch.profiler.schedule(
            skip_first=warmup_steps - profile_steps - 2,
            wait=0,
            warmup=1,
            active=profile_steps,
            repeat=1,
        )
        self._profiler = torch.profiler.profile(
            activities=activities, schedule=schedule, on_trace_ready=self._write
        )
        self._profiler.start()

    def _write(self, profiler: torch.profiler.profile) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        profiler.export_chrome_trace(str(self.path))
        self.written = True

    def step(self) -> None:
        """Mark the end of a training step."""
        self._profiler.step()

    def close(self) -> None:
        """Stop the profiler (writes nothing more)."""
        self._profiler.stop()
