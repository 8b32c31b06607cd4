"""Log ingestion: turn real runs into per-step, per-sample and per-rank tables.

One format per module:

- :mod:`~trainscale.ingest.steplog`: torchtitan and Megatron-LM step logs, Megatron golden values;
- :mod:`~trainscale.ingest.power`: ``nvidia-smi`` CSV and ``dcgmi dmon`` power logs, aligned to
  step intervals;
- :mod:`~trainscale.ingest.nccltests`: nccl-tests stdout and JSON reports;
- :mod:`~trainscale.ingest.kineto` and :mod:`~trainscale.ingest.hta`: PyTorch profiler traces and
  HolisticTraceAnalysis's overlap metrics;
- :mod:`~trainscale.ingest.steady`: steady-state medians after the warm-up.

Formats and sources: ../shared/reference/log-formats.md. Every parser raises
:class:`~trainscale.errors.InputFileError` for an unreadable file and counts, never guesses,
garbled lines.
"""

from __future__ import annotations

from trainscale.ingest.hta import (
    collective_breakdown,
    kernel_type_breakdown,
    overlap_summary,
    step_breakdown,
)
from trainscale.ingest.kineto import KinetoTrace, load_traces, read_trace
from trainscale.ingest.nccltests import NcclTestsLog, parse_nccl_tests
from trainscale.ingest.power import align_power_to_steps, parse_power_log
from trainscale.ingest.power_dcgmi import parse_dcgmi_dmon
from trainscale.ingest.power_samples import PowerLog
from trainscale.ingest.power_smi import parse_nvidia_smi_csv
from trainscale.ingest.steady import SteadyState, steady_state, steady_trace_steps
from trainscale.ingest.steplog import StepLog, parse_step_log

__all__ = [
    "KinetoTrace",
    "NcclTestsLog",
    "PowerLog",
    "SteadyState",
    "StepLog",
    "align_power_to_steps",
    "collective_breakdown",
    "kernel_type_breakdown",
    "load_traces",
    "overlap_summary",
    "parse_dcgmi_dmon",
    "parse_nccl_tests",
    "parse_nvidia_smi_csv",
    "parse_power_log",
    "parse_step_log",
    "read_trace",
    "steady_state",
    "steady_trace_steps",
    "step_breakdown",
]
