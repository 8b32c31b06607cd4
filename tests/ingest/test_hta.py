"""Tests of trainscale.ingest.hta: exact parity with HolisticTraceAnalysis on the real samples.

Reference values: ../shared/real-samples/README.md and ../shared/reference/log-formats.md §5.1,
computed with HolisticTraceAnalysis 0.5.0 (PyPI) and its defaults, i.e.

    from hta.trace_analysis import TraceAnalysis
    t = TraceAnalysis(trace_dir=...)          # trace_filter: ranks 0 and 1 together
    t.get_comm_comp_overlap(visualize=False)  # comp_comm_overlap_pctg
    t.get_temporal_breakdown(visualize=False) # idle / compute / non-compute, kernel time
    t.get_gpu_kernel_breakdown(visualize=False)[0]  # kernel-type table, summed over ranks

The hand-made trace in _traces.py checks the same functions against values worked out on paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.ingest import hta
from trainscale.ingest.kineto import load_traces

from ._samples import NCCL_PARSER_CONFIG, TRACE_FILTER_RANK0, TRACE_FILTER_RANK1, sample_file
from ._traces import synthetic_trace, write_trace

# (rank, overlap %, comm, comp, overlap, exposed comm, kernel span, idle, idle %, compute %,
#  non-compute %), µs unless %; README "Reference values for the traces".
TRACE_FILTER_EXPECTED = [
    (0, 11.81, 195_327, 106_252, 23_068, 172_259, 600_058, 321_378, 53.56, 17.71, 28.74),
    (1, 20.05, 168_027, 135_548, 33_691, 134_336, 600_674, 328_671, 54.72, 22.57, 22.72),
]
NCCL_EXPECTED = [
    (0, 14.31, 24_278, 75_169, 3_473, 20_805, 435_586, 338_781, 77.78, 17.26, 4.97),
]
SUMMARY_COLUMNS = [
    "rank",
    "comp_comm_overlap_pctg",
    "comm_us",
    "comp_us",
    "overlap_us",
    "exposed_comm_us",
    "kernel_span_us",
    "idle_us",
    "idle_pct",
    "compute_pct",
    "non_compute_pct",
]

# README "HTA get_gpu_kernel_breakdown (kernel-type table, summed over ranks)".
TRACE_FILTER_KERNEL_TYPES = {
    "COMMUNICATION": 305_584,
    "COMPUTATION": 185_023,
    "COMPUTATION overlapping COMMUNICATION": 56_747,
    "MEMORY": 2_288,
    "COMMUNICATION overlapping MEMORY": 1_011,
    "COMPUTATION overlapping MEMORY": 18,
    "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": 12,
}
NCCL_KERNEL_TYPES = {
    "COMPUTATION": 71_696,
    "COMMUNICATION": 20_621,
    "COMPUTATION overlapping COMMUNICATION": 3_473,
    "MEMORY": 831,
    "COMMUNICATION overlapping MEMORY": 184,
}


@pytest.fixture(scope="module")
def trace_filter():
    return load_traces([sample_file(TRACE_FILTER_RANK0), sample_file(TRACE_FILTER_RANK1)])


@pytest.fixture(scope="module")
def nccl_trace():
    return load_traces([sample_file(NCCL_PARSER_CONFIG)])


def _expected_frame(rows):
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS).astype(
        {c: np.float64 for c in SUMMARY_COLUMNS[1:]}
    )


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [("trace_filter", TRACE_FILTER_EXPECTED), ("nccl_trace", NCCL_EXPECTED)],
)
def test_overlap_summary_reproduces_hta_exactly(request, fixture, expected):
    summary = hta.overlap_summary(request.getfixturevalue(fixture))
    pd.testing.assert_frame_equal(
        summary[SUMMARY_COLUMNS].reset_index(drop=True),
        _expected_frame(expected),
        check_exact=True,
    )


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [("trace_filter", TRACE_FILTER_KERNEL_TYPES), ("nccl_trace", NCCL_KERNEL_TYPES)],
)
def test_kernel_type_breakdown_reproduces_hta_exactly(request, fixture, expected):
    table = hta.kernel_type_breakdown(request.getfixturevalue(fixture))
    assert dict(zip(table["kernel_type"], table["time_us"], strict=True)) == expected
    assert table["time_us"].is_monotonic_decreasing
    assert table["percentage"].sum() == pytest.approx(100, abs=0.2)


def test_kernel_breakdown_is_consistent_with_exposed_communication(trace_filter):
    # README: 305,584 + 1,011 = 306,595 = 172,259 + 134,336.
    table = hta.kernel_type_breakdown(trace_filter).set_index("kernel_type")["time_us"]
    exposed = hta.overlap_summary(trace_filter)["exposed_comm_us"].sum()
    assert table["COMMUNICATION"] + table["COMMUNICATION overlapping MEMORY"] == exposed


def test_collectives_come_from_args_and_add_up(nccl_trace, trace_filter):
    # nccl_data: AllReduce x15 and Broadcast x6 kernels in the file (README), with
    # "Collective name" args; the last profiler step is dropped, so fewer are kept.
    table = hta.collective_breakdown(nccl_trace).set_index("collective")
    assert list(table.index) == ["allreduce", "broadcast"]
    assert table.loc["allreduce", "kernels"] < 15
    assert table.loc["broadcast", "kernels"] < 6
    summary = hta.overlap_summary(nccl_trace).iloc[0]
    assert table["comm_us"].sum() == summary["comm_us"]
    assert table["exposed_comm_us"].sum() == summary["exposed_comm_us"]
    # trace_filter: only ncclKernel_SendRecv_… kernels, no args → name from the kernel.
    sendrecv = hta.collective_breakdown(trace_filter)
    assert set(sendrecv["collective"]) == {"sendrecv"}
    assert list(sendrecv["comm_us"]) == [195_327, 168_027]


def test_step_breakdown_adds_up_to_the_rank_totals(nccl_trace):
    steps = hta.step_breakdown(nccl_trace)
    assert list(steps["step"]) == [4, 5]  # ProfilerStep#6, the last one, is dropped
    totals = steps[["comm_us", "comp_us", "overlap_us", "exposed_comm_us"]].sum()
    assert list(totals) == [24_278, 75_169, 3_473, 20_805]
    assert (steps["comm_allreduce_us"] + steps["comm_broadcast_us"] == steps["comm_us"]).all()


def test_include_last_profiler_step_keeps_more_kernels():
    default = hta.overlap_summary(load_traces([sample_file(NCCL_PARSER_CONFIG)]))
    everything = hta.overlap_summary(
        load_traces([sample_file(NCCL_PARSER_CONFIG)], include_last_profiler_step=True)
    )
    assert everything["comm_us"].iloc[0] > default["comm_us"].iloc[0]
    assert everything["kernel_span_us"].iloc[0] > default["kernel_span_us"].iloc[0]


# --- hand-made trace (values worked out in _traces.py's docstring) ------------------------------


@pytest.fixture
def synthetic(tmp_path):
    return load_traces([write_trace(tmp_path / "rank-0.json", synthetic_trace())])


def test_synthetic_overlap_and_temporal_breakdown(synthetic):
    row = hta.overlap_summary(synthetic).iloc[0]
    # comm = [250,450] + [1150,1350] = 400; comp = 200+100+100+50 = 450;
    # overlap = [250,300] + [400,450] + [1150,1200] = 150; span = 100 → 1410;
    # busy = [100,520] + [1100,1410] = 730, so idle = 1310 - 730.
    assert row["comm_us"] == 400
    assert row["comp_us"] == 450
    assert row["overlap_us"] == 150
    assert row["exposed_comm_us"] == 250
    assert row["comp_comm_overlap_pctg"] == 37.5
    assert row["kernel_span_us"] == 1310
    assert row["idle_us"] == 580
    assert row["non_compute_us"] == 1310 - 450 - 580
    assert row["compute_pct"] == round(100 * 450 / 1310, 2)


def test_synthetic_kernel_types_collectives_and_steps(synthetic):
    types = hta.kernel_type_breakdown(synthetic)
    assert dict(zip(types["kernel_type"], types["time_us"], strict=True)) == {
        "COMPUTATION": 300,
        "COMMUNICATION": 250,
        "COMPUTATION overlapping COMMUNICATION": 150,
        "MEMORY": 30,
    }
    collectives = hta.collective_breakdown(synthetic).set_index("collective")
    assert collectives.loc["allgather", ["comm_us", "exposed_comm_us"]].tolist() == [200, 100]
    assert collectives.loc["reducescatter", ["comm_us", "exposed_comm_us"]].tolist() == [200, 150]
    steps = hta.step_breakdown(synthetic).set_index("step")
    assert steps.loc[1, ["comm_us", "comp_us", "overlap_us", "idle_us"]].tolist() == [
        200,
        300,
        100,
        0,
    ]
    assert steps.loc[2, ["comm_us", "comp_us", "overlap_us", "kernel_span_us"]].tolist() == [
        200,
        150,
        50,
        310,
    ]
    assert steps.loc[1, "comm_allgather_us"] == 200
    assert steps.loc[1, "comm_reducescatter_us"] == 0


def test_rank_without_communication_has_nan_overlap(tmp_path):
    document = synthetic_trace()
    document["traceEvents"] = [
        e for e in document["traceEvents"] if not str(e.get("name", "")).startswith("nccl")
    ]
    row = hta.overlap_summary(load_traces([write_trace(tmp_path / "t.json", document)])).iloc[0]
    assert np.isnan(row["comp_comm_overlap_pctg"])
    assert row["comm_us"] == 0


def test_ns_rounding_removes_false_overlap(tmp_path):
    # Back-to-back kernels with float ns timestamps: compute ends at 200.2, the NCCL kernel
    # starts at 200.1. HTA rounds (ceil start, floor end), so they no longer overlap.
    document = synthetic_trace()
    events = [
        e
        for e in document["traceEvents"]
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")
    ]
    base = 1_700_000_000_000
    events += [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "void gemm()",
            "pid": 0,
            "tid": 7,
            "ts": base + 100.4,
            "dur": 99.8,
            "args": {"stream": 7, "correlation": 1},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclDevKernel_Generic",
            "pid": 0,
            "tid": 20,
            "ts": base + 200.1,
            "dur": 50.5,
            "args": {"stream": 20, "correlation": 2},
        },
    ]
    document["traceEvents"] = events
    row = hta.overlap_summary(load_traces([write_trace(tmp_path / "t.json", document)])).iloc[0]
    assert row["overlap_us"] == 0
    assert row["comp_us"] == 200 - 101  # floor(200.2) - ceil(100.4)
    assert row["comm_us"] == 250 - 201  # floor(250.6) - ceil(200.1)


# --- building blocks ---------------------------------------------------------------------------


def test_merge_intervals_merges_overlapping_and_touching():
    start, end = hta.merge_intervals(
        np.array([5.0, 0.0, 10.0, 30.0]), np.array([10.0, 6.0, 20.0, 40.0])
    )
    assert start.tolist() == [0.0, 30.0]
    assert end.tolist() == [20.0, 40.0]
    empty = hta.merge_intervals(np.array([]), np.array([]))
    assert empty[0].size == 0


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            hta.COMMUNICATION,
        ),
        ("ncclDevKernel_Generic", hta.COMMUNICATION),
        ("void foo::ncclKernel_bar()", hta.COMMUNICATION),
        ("hcclAllReduce", hta.COMMUNICATION),
        ("Memcpy DtoH (Device -> Pageable)", hta.MEMORY),
        ("Memset (Device)", hta.MEMORY),
        ("dma_copy", hta.MEMORY),
        ("void at::native::vectorized_elementwise_kernel<4>()", hta.COMPUTATION),
        ("Context Sync", hta.OTHER),
        ("Stream Wait Event", hta.OTHER),
    ],
)
def test_classify_kernels_follows_hta_patterns(name, kind):
    assert hta.classify_kernels(pd.Series([name])).tolist() == [kind]
