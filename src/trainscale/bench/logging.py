"""torchtitan-format step lines (../shared/reference/log-formats.md §1.1).

The harness writes exactly what torchtitan's ``MetricsProcessor.log`` prints, with the
``[titan]`` logger prefix and without colour codes::

    [titan] 2025-01-01 12:00:00,123 - root - INFO - step:  5  loss:  5.1234  grad_norm:  0.8123  \
    memory:  0.41GiB(1.71%)  tps: 7,912  tflops: 0.05  mfu: 0.00%

(one line; wrapped here)
so that every torchtitan parser, including :func:`trainscale.ingest.steplog.parse_step_log`,
reads the harness's logs like a real torchtitan run's. The fields are:

- ``tps``: tokens per second **per GPU** = tokens this rank trained in the step ÷ (step wall
  time × tp), as torchtitan divides by the non-data-parallel degree;
- ``tflops``: model FLOPs per token × ``tps`` ÷ 10¹² (model TFLOP/s per GPU);
- ``mfu``: 100 × model FLOPs per token × ``tps`` ÷ dense peak FLOP/s of the device
  (``0.00`` when the peak is unknown, e.g. on CPU without ``--peak-tflops``);
- ``memory``: peak reserved GiB since the previous line and its share of the device's memory
  (on CPU: the process's peak resident set size and its share of the host's memory).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

__all__ = ["LINE_FORMAT", "StepLogger", "format_step"]

#: ``logging`` format of every line (torchtitan's logger; ``asctime`` is ``YYYY-MM-DD
#: HH:MM:SS,mmm`` local time).
LINE_FORMAT = "[titan] %(asctime)s - root - %(levelname)s - %(message)s"


def format_step(
    *,
    step: int,
    loss: float,
    grad_norm: float,
    memory_gib: float,
    memory_pct: float,
    tps: float,
    tflops: float,
    mfu_pct: float,
) -> str:
    """The message of one step line, field for field torchtitan's format string.

    Parameters
    ----------
    step
        Optimizer step, from 1.
    loss
        Training loss (mean over data-parallel ranks).
    grad_norm
        Global gradient L2 norm before clipping.
    memory_gib, memory_pct
        Peak memory in GiB (2**30 bytes) and in % of the device's capacity.
    tps
        Tokens per second per GPU; printed rounded, with thousands separators.
    tflops
        Model TFLOP/s per GPU.
    mfu_pct
        Model FLOPs utilisation in percent.
    """
    return (
        f"step: {step:2}  loss: {loss:7.4f}  grad_norm: {grad_norm:7.4f}  "
        f"memory: {memory_gib:5.2f}GiB({memory_pct:.2f}%)  "
        f"tps: {round(tps):,}  tflops: {tflops:,.2f}  mfu: {mfu_pct:.2f}%"
    )


class StepLogger:
    """Writes torchtitan-format lines to a log file (and, optionally, a stream)."""

    def __init__(self, path: Path, *, stream: TextIO | None = sys.stdout) -> None:
        """Open ``path`` for writing (truncating it); echo each line to ``stream`` if given."""
        self.path = Path(path)
        self._logger = logging.getLogger(f"trainscale.bench.steps.{id(self)}")
        self._logger.setLevel(logging.INFO)
        self._logger.propagate = False
        formatter = logging.Formatter(LINE_FORMAT)
        self._handlers: list[logging.Handler] = [
            logging.FileHandler(self.path, mode="w", encoding="utf-8")
        ]
        if stream is not None:
            self._handlers.append(logging.StreamHandler(stream))
        for handler in self._handlers:
            handler.setFormatter(formatter)
            self._logger.addHandler(handler)

    def info(self, message: str) -> None:
        """Write one INFO line (free text, e.g. the run's settings)."""
        self._logger.info(message)

    def warning(self, message: str) -> None:
        """Write one WARNING line."""
        self._logger.warning(message)

    def step(self, **fields: float) -> None:
        """Write one step line; ``fields`` as :func:`format_step`."""
        self._logger.info(format_step(**fields))  # type: ignore[arg-type]

    def close(self) -> None:
        """Flush and close the file."""
        for handler in self._handlers:
            handler.flush()
            self._logger.removeHandler(handler)
            if isinstance(handler, logging.FileHandler):
                handler.close()
