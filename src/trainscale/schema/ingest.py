"""The tables the ingesters return or write: a run's steps, nccl-tests results, traces, rejects."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

STEP_COLUMNS: tuple[Column, ...] = table("STEP_COLUMNS")
"""Columns of :attr:`trainscale.ingest.steplog.StepLog.steps`: one row per logged step of one step
log. Fields a format does not have are null."""

STEP_TABLE_COLUMNS: tuple[Column, ...] = table("STEP_TABLE_COLUMNS")
"""Columns of the per-step table of a run (:func:`trainscale.ingest.runs.ingest_run`, written to
``results/measured/<run>_steps.parquet``): where each step came from, whether it was warm-up, then
the parsed step-log columns (:data:`STEP_COLUMNS`)."""

NCCL_COLUMNS: tuple[Column, ...] = table("NCCL_COLUMNS")
"""Columns of :attr:`trainscale.ingest.nccltests.NcclTestsLog.results`: one row per message size
(and test) of an nccl-tests output. Columns an output has beyond these (``max_error``, the
per-iteration timings ``i_min_us`` …) come between ``gpu_name`` and ``line``."""

TRACE_COLUMNS: tuple[Column, ...] = table("TRACE_COLUMNS")
"""Columns of ``trainscale trace`` (:func:`trainscale.commands.trace.trace_table`): one row per rank
of a job's Kineto traces, HolisticTraceAnalysis's overlap and temporal breakdown."""

REJECT_COLUMNS: tuple[Column, ...] = table("REJECT_COLUMNS")
"""Columns of a rejects table after the columns of the rows it rejects: a study's
``results/studies/<study>/rejects.parquet``, :func:`trainscale.sim.configs.build_configs`'
rejects."""
