"""The tables the ingesters return or write: a run's steps, nccl-tests results, traces, rejects."""

from __future__ import annotations

from trainscale.schema.column import Column, _c
from trainscale.schema.shared import RUN_ID

#: Columns of :attr:`trainscale.ingest.steplog.StepLog.steps`: one row per logged step of one
#: step log. Fields a format does not have are null.
STEP_COLUMNS: tuple[Column, ...] = (
    _c("step", "int64", "1", "optimizer step / iteration number as logged"),
    _c("line", "int64", "1", "1-based line of the log file; null for a JSON log"),
    _c("timestamp", "timestamp", "datetime", "the line's time, naive, as written; null if none"),
    _c("loss", "float64", "1", "training loss (Megatron lm loss)"),
    _c(
        "step_time_s",
        "float64",
        "s",
        "seconds per step: the log's own (Megatron elapsed time per iteration, golden values "
        "iteration-time) or, for torchtitan, the time since the previous parsed line divided by "
        "the steps between them",
    ),
    _c(
        "tokens_per_s_per_gpu",
        "float64",
        "tokens/s",
        "logged tokens/s per GPU (torchtitan tps/wps, Primus tokens per GPU, Megatron-DeepSpeed "
        "tgs)",
    ),
    _c(
        "tflops_per_gpu",
        "float64",
        "TFLOP/s",
        "logged model TFLOP/s per GPU (torchtitan tflops, Megatron throughput per GPU)",
    ),
    _c("mfu", "float64", "1", "logged model FLOPs utilisation, fraction in [0, 1]"),
    _c("mem_gib", "float64", "GiB", "peak memory per GPU (torchtitan reserved, golden allocated)"),
    _c("power_w_per_gpu", "float64", "W", "logged average power per GPU (Megatron --log-energy)"),
    _c(
        "energy_j_per_gpu", "float64", "J", "logged energy per GPU per step (Megatron --log-energy)"
    ),
    _c("global_batch", "int64", "sequences", "sequences per step as logged (Megatron)"),
)

#: Columns of the per-step table of a run (:func:`trainscale.ingest.runs.ingest_run`, written to
#: ``results/measured/<run>_steps.parquet``): where each step came from, whether it was warm-up,
#: then the parsed step-log columns (:data:`STEP_COLUMNS`).
STEP_TABLE_COLUMNS: tuple[Column, ...] = (
    RUN_ID,
    _c("job", "string", "1", "the job of the run the step belongs to (the run id for one job)"),
    _c("log_file", "string", "1", "the step log, relative to the run folder"),
    *(c for c in STEP_COLUMNS if c.name == "line"),
    *(c for c in STEP_COLUMNS if c.name == "step"),
    _c("warmup", "bool", "1", "the step is warm-up, left out of the run's steady state"),
    *(c for c in STEP_COLUMNS if c.name not in ("step", "line")),
)

#: Columns of :attr:`trainscale.ingest.nccltests.NcclTestsLog.results`: one row per message size
#: (and test) of an nccl-tests output. Columns an output has beyond these (``max_error``, the
#: per-iteration timings ``i_min_us`` …) come between ``gpu_name`` and ``line``.
NCCL_COLUMNS: tuple[Column, ...] = (
    _c("test", "string", "1", "nccl-tests binary, e.g. all_reduce_perf"),
    _c("collective", "string", "1", "canonical collective: allreduce, allgather, reducescatter …"),
    _c("size_bytes", "int64", "bytes", "message size: the whole buffer, as nccl-tests counts it"),
    _c("count", "int64", "1", "elements in the buffer"),
    _c("dtype", "string", "1", "element type, e.g. float"),
    _c("redop", "string", "1", "reduction operator, e.g. sum; null where the test has none"),
    _c("root", "int64", "1", "root rank (-1 for none); null where the release has no column"),
    *(
        _c(f"{prefix}{name}", dtype, unit, f"{place}: {meaning}")
        for prefix, place in (("", "out of place"), ("inplace_", "in place"))
        for name, dtype, unit, meaning in (
            ("time_us", "float64", "µs", "time of one collective"),
            ("algbw_gbytes_per_s", "float64", "GB/s", "algorithm bandwidth: size / time"),
            ("busbw_gbytes_per_s", "float64", "GB/s", "bus bandwidth as nccl-tests defines it"),
            ("wrong", "float64", "1", "wrong elements; NaN when validation is off"),
        )
    ),
    _c("num_ranks", "int64", "1", "distinct ranks of the device lines; null without them"),
    _c("num_nodes", "int64", "1", "distinct hostnames of the device lines; null without them"),
    _c("gpu_name", "string", "1", "the device lines' (most common) GPU name; null without them"),
    _c("line", "int64", "1", "1-based line of the output; null for a JSON report"),
)

#: Columns of ``trainscale trace`` (:func:`trainscale.commands.trace.trace_table`): one row per
#: rank of a job's Kineto traces, HolisticTraceAnalysis's overlap and temporal breakdown.
TRACE_COLUMNS: tuple[Column, ...] = (
    _c("rank", "int64", "1", "the trace's rank"),
    _c("comp_us", "float64", "µs", "computation kernels' time (merged intervals)"),
    _c("comm_us", "float64", "µs", "communication kernels' time (merged intervals)"),
    _c("overlap_us", "float64", "µs", "communication time overlapped by computation"),
    _c(
        "comp_comm_overlap_pctg",
        "float64",
        "%",
        "share of communication time hidden under computation, 2 decimals; NaN without any",
    ),
    _c("exposed_comm_us", "float64", "µs", "communication time not overlapped: comm - overlap"),
    _c("idle_us", "float64", "µs", "time of the kernel span with no kernel running"),
    _c("idle_pct", "float64", "%", "idle_us as a share of the kernel span, 2 decimals"),
    _c("kernel_span_us", "float64", "µs", "last GPU kernel end - first GPU kernel start"),
    _c("path", "string", "1", "the trace file"),
)

#: Columns of a rejects table after the columns of the rows it rejects: a study's
#: ``results/studies/<study>/rejects.parquet``, :func:`trainscale.sim.configs.build_configs`'
#: rejects.
REJECT_COLUMNS: tuple[Column, ...] = (
    _c("row", "int64", "1", "0-based row of the input (a study's grid)"),
    _c(
        "column",
        "string",
        "1",
        "configuration column at fault, or the study key (derive.*, filters.*) that dropped the "
        "row",
    ),
    _c("reason", "string", "1", "why the row was dropped"),
)
