"""Tests of trainscale.ingest.kineto: reading, ns rounding, rank alignment, step filtering.

Reference: ../shared/reference/log-formats.md §4 (Kineto trace structure) and §5 steps 1-4
(HolisticTraceAnalysis @ f4d0062c: ``trace_parser.py`` rounding, ``trace.py``
``_align_all_ranks`` / ``_filter_irrelevant_gpu_kernels``). Sample facts (ranks, world sizes,
profiler steps, GPU name) are from ../shared/real-samples/README.md; counts are recomputed
from the files themselves.
"""

from __future__ import annotations

import gzip
import json
import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from trainscale.errors import InputFileError
from trainscale.ingest.kineto import load_traces, read_trace

from ._samples import NCCL_PARSER_CONFIG, TRACE_FILTER_RANK0, TRACE_FILTER_RANK1, sample_file
from ._traces import GPU_EVENTS, synthetic_trace, write_trace


def _raw_events(path):
    with gzip.open(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


def test_read_trace_filter_sample_metadata_and_counts():
    path = sample_file(TRACE_FILTER_RANK0)
    trace = read_trace(path)
    # README: rank 0 of a 128-rank job, no deviceProperties, ProfilerStep#551 and #552.
    assert (trace.rank, trace.world_size, trace.device_name) == (0, 128, None)
    assert trace.steps["step"].tolist() == [551, 552]
    raw = _raw_events(path)
    gpu = [e for e in raw if "stream" in e.get("args", {})]
    assert int(trace.events["is_gpu"].sum()) == len(gpu)
    assert int((trace.events["cat"] == "kernel").sum()) == 1154  # README: 1,154 kernels
    kernels = trace.events[trace.events["cat"] == "kernel"]
    assert set(kernels["stream"]) == {7, 23, 84, 203}  # README: streams 7/23/84/203


def test_read_nccl_sample_rounds_float_timestamps_like_hta():
    path = sample_file(NCCL_PARSER_CONFIG)
    trace = read_trace(path)
    assert (trace.rank, trace.world_size) == (0, 2)
    assert trace.device_name == "NVIDIA A100-PG509-200"
    assert trace.steps["step"].tolist() == [4, 5, 6]
    raw = next(e for e in _raw_events(path) if e.get("name", "").startswith("ncclKernel"))
    assert not float(raw["ts"]).is_integer()  # the sample really has ns floats
    row = trace.events[
        (trace.events["correlation"] == raw["args"]["correlation"]) & trace.events["is_gpu"]
    ].iloc[0]
    assert row["ts_us"] == math.ceil(raw["ts"])
    assert row["end_us"] == math.floor(raw["ts"] + raw["dur"])
    assert row["dur_us"] == row["end_us"] - row["ts_us"]
    assert row["collective"] == "allreduce"  # args["Collective name"] == "allreduce"
    assert np.all(np.mod(trace.events["ts_us"], 1) == 0)


def test_load_aligns_ranks_by_the_global_minimum():
    paths = [sample_file(TRACE_FILTER_RANK0), sample_file(TRACE_FILTER_RANK1)]
    raw_minimum = min(
        e["ts"]
        for p in paths
        for e in _raw_events(p)
        if "dur" in e and e.get("cat") not in (None, "Trace")
    )
    traces = load_traces(paths)
    assert [t.rank for t in traces] == [0, 1]
    assert all(t.offset_us == raw_minimum for t in traces)
    assert min(t.events["ts_us"].min() for t in traces) == 0


def test_load_drops_the_last_profiler_step_and_its_kernels():
    traces = load_traces([sample_file(TRACE_FILTER_RANK0), sample_file(TRACE_FILTER_RANK1)])
    for trace in traces:
        assert trace.filtered
        assert trace.steps["step"].tolist() == [551]
        events = trace.events
        cpu = events[~events["is_gpu"]]
        gpu = events[events["is_gpu"]]
        assert set(gpu["correlation"]) <= set(cpu["correlation"])
        assert (gpu["step"] == 551).all()
    kept = load_traces([sample_file(TRACE_FILTER_RANK0)], include_last_profiler_step=True)[0]
    assert kept.steps["step"].tolist() == [551, 552]


def test_synthetic_trace_filter_and_step_labels(tmp_path):
    trace = load_traces([write_trace(tmp_path / "rank-0.json.gz", synthetic_trace())])[0]
    gpu = trace.events[trace.events["is_gpu"]]
    in_steps_1_2 = [e for e in GPU_EVENTS if e[5] in (1, 2)]
    assert len(gpu) == len(in_steps_1_2)
    assert gpu["step"].tolist() == [e[5] for e in in_steps_1_2]
    assert trace.device_name == "NVIDIA H100 80GB HBM3"
    assert "Trace" not in set(trace.events["cat"])


def test_rank_from_file_name_and_duplicate_ranks(tmp_path):
    document = synthetic_trace()
    del document["distributedInfo"]
    named = write_trace(tmp_path / "job_rank-3.json", document)
    assert read_trace(named).rank == 3
    other = write_trace(tmp_path / "other.json", synthetic_trace(rank=3))
    with pytest.raises(InputFileError, match="rank 3"):
        load_traces([named, other])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "invalid or truncated JSON"),
        (b'{"traceEvents": {}}', "no 'traceEvents' list"),
        (b"\x1f\x8b\x08\x00garbage", "gzip"),
        (b"\xff\xfe\x00binary", "UTF-8"),
    ],
)
def test_bad_files_raise_input_file_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as error:
        read_trace(path)
    assert str(path) in str(error.value)


def test_missing_file_raises_input_file_error(tmp_path):
    with pytest.raises(InputFileError, match="cannot read"):
        read_trace(tmp_path / "absent.json")


# --- property tests: truncated or corrupted traces ---------------------------------------------

_DOCUMENT = json.dumps(synthetic_trace(), indent=1).encode()
_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(cut=st.floats(min_value=0.0, max_value=0.999))
def test_truncated_json_names_the_file_and_line(tmp_path, cut):
    path = tmp_path / "truncated.json"
    path.write_bytes(_DOCUMENT[: int(cut * len(_DOCUMENT))])
    with pytest.raises(InputFileError) as error:
        read_trace(path)
    assert error.value.path == str(path)
    assert error.value.line is not None


@_SETTINGS
@given(cut=st.floats(min_value=0.0, max_value=0.999))
def test_truncated_gzip_names_the_file(tmp_path, cut):
    data = gzip.compress(_DOCUMENT)
    path = tmp_path / "truncated.json.gz"
    path.write_bytes(data[: max(2, int(cut * len(data)))])
    with pytest.raises(InputFileError) as error:
        read_trace(path)
    assert error.value.path == str(path)


@_SETTINGS
@given(data=st.data())
def test_corrupted_trace_loads_or_raises_input_file_error(tmp_path, data):
    raw = bytearray(_DOCUMENT)
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "corrupted.json"
    path.write_bytes(bytes(raw))
    try:
        traces = load_traces([path])
    except InputFileError as error:
        assert error.path == str(path)
    else:
        assert len(traces) == 1
