"""A small hand-made Kineto trace whose HTA numbers can be worked out on paper.

Three profiler steps (the last is dropped by default). Step 1: compute [100, 300] and
[400, 500] on stream 7, AllGather [250, 450] on stream 20 (``Collective name`` in args), a
memcpy [500, 520]. Step 2: compute [1100, 1200] and [1350, 1400], ReduceScatter
[1150, 1350] (collective only in the kernel name), a memset [1400, 1410]. Step 3: compute
[2100, 2200]. Times in µs; the worked-out values are in the tests that use it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

GEMM = "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>"
ALLGATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
REDUCE_SCATTER = (
    "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
)

#: (name, cat, stream, ts, dur, step, collective arg)
GPU_EVENTS = (
    (GEMM, "kernel", 7, 100, 200, 1, None),
    (GEMM, "kernel", 7, 400, 100, 1, None),
    (ALLGATHER, "kernel", 20, 250, 200, 1, "_allgather_base"),
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 7, 500, 20, 1, None),
    (GEMM, "kernel", 7, 1100, 100, 2, None),
    (REDUCE_SCATTER, "kernel", 20, 1150, 200, 2, None),
    (GEMM, "kernel", 7, 1350, 50, 2, None),
    ("Memset (Device)", "gpu_memset", 7, 1400, 10, 2, None),
    (GEMM, "kernel", 7, 2100, 100, 3, None),
)
STEP_STARTS = {1: 0, 2: 1000, 3: 2000}
STEP_DURS = {1: 1000, 2: 1000, 3: 500}


def synthetic_trace(
    *, rank: int = 0, base_us: int = 1_700_000_000_000, shift_us: int = 0, world_size: int = 2
) -> dict:
    """The trace as a JSON document; every ts is offset by base_us + shift_us."""
    base = base_us + shift_us
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": base - 50,
            "dur": 5000,
        },
        {"ph": "i", "name": "Record Window End", "pid": "", "tid": "", "ts": base + 4000},
    ]
    for step, start in STEP_STARTS.items():
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 10,
                "tid": 10,
                "ts": base + start,
                "dur": STEP_DURS[step],
                "args": {"External id": step},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 10,
                "tid": 10,
                "ts": base + start + 5,
                "dur": 3,
                "args": {"External id": 100 + step},
            }
        )
    for correlation, (name, cat, stream, ts, dur, step, collective) in enumerate(GPU_EVENTS, 1):
        launch = base + STEP_STARTS[step] + 10 + correlation
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 10,
                "tid": 10,
                "ts": launch,
                "dur": 2,
                "args": {"correlation": correlation},
            }
        )
        events.append(
            {
                "ph": "s",
                "cat": "ac2g",
                "name": "ac2g",
                "id": correlation,
                "pid": 10,
                "tid": 10,
                "ts": launch,
            }
        )
        args = {"device": 0, "stream": stream, "correlation": correlation}
        if collective:
            args["Collective name"] = collective
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": base + ts,
                "dur": dur,
                "args": args,
            }
        )
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "traceEvents": events,
    }


def write_trace(path: Path, document: dict) -> Path:
    """Write the document as JSON, gzip-compressed when the name ends in .gz."""
    data = json.dumps(document, indent=1).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path
