"""Tests of trainscale.ingest._collectives: one name per collective across sources.

Reference: spellings from ../shared/reference/log-formats.md §4.2 (``args["Collective name"]``,
kernel names by NCCL version) and §3 (nccl-tests binary names); target names match the result
table's ``allreduce_s`` / ``allgather_s`` / ``reducescatter_s`` columns (trainscale.schema).
"""

from __future__ import annotations

import pytest

from trainscale.ingest._collectives import canonical_collective, collective_from_kernel_name


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("allreduce", "allreduce"),
        ("_allgather_base", "allgather"),
        ("reduce_scatter_tensor_coalesced", "reducescatter"),
        ("AllReduce", "allreduce"),
        ("all_reduce_perf", "allreduce"),
        ("sendrecv_perf", "sendrecv"),
        ("alltoall_perf", "alltoall"),
        ("hypercube_perf", "hypercube"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_canonical_collective(name, canonical):
    assert canonical_collective(name) == canonical


@pytest.mark.parametrize(
    ("kernel", "canonical"),
    [
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            "allreduce",
        ),
        (
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
            "sendrecv",
        ),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*)", "reducescatter"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", "allgather"),
        ("ncclDevKernel_Generic", "unknown"),
        ("void gemm()", "unknown"),
    ],
)
def test_collective_from_kernel_name(kernel, canonical):
    assert collective_from_kernel_name(kernel) == canonical
