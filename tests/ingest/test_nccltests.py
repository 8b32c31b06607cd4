"""Tests of trainscale.ingest.nccltests: nccl-tests stdout tables and JSON reports.

Reference: ../shared/reference/log-formats.md §3 and ``NVIDIA/nccl-tests`` ``src/util.cu``
(``writeDeviceReport``, ``writeResultHeader``, ``writeBenchmarkLine*``, ``getFloatStr``,
JSON keys ``config.devices``, ``results[].out_of_place/in_place`` with ``time``, ``alg_bw``,
``bus_bw``, ``nwrong``). The example table is the one of log-formats.md §3 (8 ranks, a 1 MiB
AllReduce); the property test formats numbers with a port of ``getFloatStr``.
"""

from __future__ import annotations

import json
import math

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from trainscale.errors import InputFileError
from trainscale.ingest.nccltests import parse_nccl_tests
from trainscale.schema import NCCL_COLUMNS, names

DEVICE_LINES = [
    f"#  Rank {r:2d} Group  0 Pid {12345 + r:6d} on {'node01':>10s} device {r:2d} "
    f"[0000:{0x18 + r:02x}:00] NVIDIA H100 80GB HBM3"
    for r in range(8)
]
TABLE_HEADER = [
    "#                                                              out-of-place"
    "                       in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)",
]
DOC_EXAMPLE = "\n".join(
    [
        "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
        "#",
        "# Using devices",
        *DEVICE_LINES,
        "#",
        *TABLE_HEADER,
        "     1048576        262144     float     sum      -1    20.50   51.15   89.51      0"
        "    20.31   51.63   90.35      0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 89.93",
        "#",
        "# Collective test concluded: all_reduce_perf",
    ]
)


def _write(tmp_path, text, name="nccl.log"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_documented_example(tmp_path):
    log = parse_nccl_tests(_write(tmp_path, DOC_EXAMPLE))
    assert log.format == "text"
    assert log.skipped_lines == 0
    results = log.results
    assert list(results.columns) == names(NCCL_COLUMNS)
    row = results.iloc[0]
    assert (row["test"], row["collective"]) == ("all_reduce_perf", "allreduce")
    assert (row["size_bytes"], row["count"], row["dtype"], row["redop"], row["root"]) == (
        1048576,
        262144,
        "float",
        "sum",
        -1,
    )
    assert (row["time_us"], row["algbw_gbytes_per_s"], row["busbw_gbytes_per_s"], row["wrong"]) == (
        20.50,
        51.15,
        89.51,
        0,
    )
    assert (
        row["inplace_time_us"],
        row["inplace_algbw_gbytes_per_s"],
        row["inplace_busbw_gbytes_per_s"],
    ) == (
        20.31,
        51.63,
        90.35,
    )
    assert (row["num_ranks"], row["num_nodes"]) == (8, 1)
    assert row["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert row["line"] == 18


def test_mpi_prefixes_info_lines_and_two_nodes(tmp_path):
    lines = [
        "# Collective test starting: all_gather_perf",
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid  12345 on     node01 device  0 [0000:18:00] "
        "NVIDIA H100 80GB HBM3",
        "[1,1]<stdout>:#  Rank  1 Group  0 Pid  22345 on     node02 device  0 [0000:18:00] "
        "NVIDIA H100 80GB HBM3",
        "node01:12345:12345 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        *("[1,0]<stdout>:" + h for h in TABLE_HEADER),
        "[1,0]<stdout>:     2097152        262144     float    none      -1    30.50   68.76"
        "   34.38    N/A    30.31   69.19  1.2e+03    N/A",
        "node01:12345:12400 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE",
        "[1,0]<stdout>:     4194304        524288     float    none      -1    40.5#0   68.76"
        "   34.38      0    30.31   69.19   34.60      0",
    ]
    log = parse_nccl_tests(_write(tmp_path, "\n".join(lines)))
    assert log.skipped_lines == 1
    row = log.results.iloc[0]
    assert (row["collective"], row["num_ranks"], row["num_nodes"]) == ("allgather", 2, 2)
    assert math.isnan(row["wrong"])  # N/A: validation off
    assert row["inplace_busbw_gbytes_per_s"] == 1200.0  # adaptive exponent format


def test_old_layout_with_error_column_and_no_root(tmp_path):
    lines = [
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 "
        "iters: 20 validation: 1",
        "#   Rank  0 Pid  31000 on    dgx1 device  0 [0x06] Tesla V100-SXM2-32GB",
        "#   Rank  1 Pid  31000 on    dgx1 device  1 [0x07] Tesla V100-SXM2-32GB",
        "#       size         count    type   redop     time   algbw   busbw  error"
        "     time   algbw   busbw  error",
        "           8             2   float     sum    43.07    0.00    0.00  1e-07"
        "    42.87    0.00    0.00  1e-07",
    ]
    log = parse_nccl_tests(_write(tmp_path, "\n".join(lines), "reduce_scatter_perf.out"))
    row = log.results.iloc[0]
    assert (row["test"], row["collective"]) == ("reduce_scatter_perf", "reducescatter")
    assert pd.isna(row["root"])
    assert row["max_error"] == 1e-07 and row["inplace_max_error"] == 1e-07
    assert math.isnan(row["wrong"])
    assert (row["num_ranks"], row["num_nodes"], row["gpu_name"]) == (2, 1, "Tesla V100-SXM2-32GB")


def test_per_iteration_columns_and_timestamp(tmp_path):
    # writeResultHeader with per_iter_timing and report_timestamps (src/util.cu).
    header = (
        "#       size         count      type   redop    root     time   algbw   busbw"
        " #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong"
        "    i_min    i_max    i_p99    i_cv%  timestamp"
    )
    row = (
        "     1048576        262144     float     sum      -1    20.50   51.15   89.51"
        "      0    19.00    22.00    21.90     2.50    20.31   51.63   90.35      0"
        "    19.10    21.00    20.90     1.20  2025-01-01 12:00:00"
    )
    results = parse_nccl_tests(
        _write(tmp_path, header + "\n" + row), collective="all_reduce_perf"
    ).results
    assert results.loc[0, ["i_min_us", "i_max_us", "i_p99_us", "i_cv_pct"]].tolist() == [
        19.0,
        22.0,
        21.9,
        2.5,
    ]
    assert results.loc[0, "inplace_i_cv_pct"] == 1.2
    assert results.loc[0, "inplace_busbw_gbytes_per_s"] == 90.35


def test_several_tests_in_one_file(tmp_path):
    text = DOC_EXAMPLE + "\n" + DOC_EXAMPLE.replace("all_reduce_perf", "broadcast_perf")
    results = parse_nccl_tests(_write(tmp_path, text)).results
    assert results["collective"].tolist() == ["allreduce", "broadcast"]


def _json_report():
    # Keys as written by src/util.cu (JSON_FILE_VERSION 2).
    return {
        "version": 2,
        "start_time": "2025-01-01 12:00:00",
        "args": ["/opt/nccl-tests/build/reduce_scatter_perf", "-b", "8", "-e", "1G"],
        "env": [],
        "nccl_version": 22703,
        "config": {
            "nthreads": 1,
            "ngpus": 1,
            "devices": [
                {
                    "rank": r,
                    "group": 0,
                    "pid": 100 + r,
                    "hostname": f"node0{r // 4}",
                    "device": r % 4,
                    "device_hex": "0000:18:00",
                    "device_info": "NVIDIA B200",
                }
                for r in range(8)
            ],
        },
        "results": [
            {
                "size": 8388608,
                "count": 262144,
                "type": "float",
                "redop": "sum",
                "root": "    -1",
                "out_of_place": {"time": 90.1, "alg_bw": 93.1, "bus_bw": 81.46, "nwrong": 0.0},
                "in_place": {"time": 88.0, "alg_bw": 95.3, "bus_bw": 83.4, "nwrong": None},
                "actual_iterations": 20,
                "experiment_name": "default",
            },
            {"size": 16, "count": "bad"},
            {
                "size": 16777216,
                "count": 524288,
                "type": "float",
                "redop": "sum",
                "root": "    -1",
                "out_of_place": {"time": 160.5, "alg_bw": 104.5, "bus_bw": "nan", "nwrong": 0.0},
                "in_place": {"time": 158.0, "alg_bw": 106.2, "bus_bw": 92.9, "nwrong": 0.0},
            },
        ],
        "average_bus_bandwidth": {"bandwidth": 85.0, "okay": "unchecked"},
        "errors": [],
        "end_time": "2025-01-01 12:00:05",
    }


def test_json_report(tmp_path):
    log = parse_nccl_tests(_write(tmp_path, json.dumps(_json_report()), "report.json"))
    assert log.format == "json"
    assert log.skipped_lines == 1
    results = log.results
    assert results["collective"].tolist() == ["reducescatter", "reducescatter"]
    assert results["size_bytes"].tolist() == [8388608, 16777216]
    assert results["busbw_gbytes_per_s"].iloc[0] == 81.46
    assert math.isnan(results["busbw_gbytes_per_s"].iloc[1])
    assert math.isnan(results["inplace_wrong"].iloc[0])
    assert results["root"].tolist() == [-1, -1]
    assert (results["num_ranks"].iloc[0], results["num_nodes"].iloc[0]) == (8, 2)
    assert results["gpu_name"].iloc[0] == "NVIDIA B200"
    assert results["line"].isna().all()


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        ("# nThread 1\n# Using devices\n", "x.log", "no nccl-tests result row"),
        ('{"results": [{"size": 8, "coun', "x.json", "invalid or truncated JSON"),
        ('{"version": 2}', "x.json", "no 'results' list"),
    ],
)
def test_bad_inputs(tmp_path, content, name, message):
    path = _write(tmp_path, content, name)
    with pytest.raises(InputFileError, match=message) as error:
        parse_nccl_tests(path)
    assert error.value.path == str(path)


# --- property tests ----------------------------------------------------------------------------

GARBAGE = "#@!?~^$&*;<>{}|\\\"'`="
_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def float_str(value: float, width: int) -> str:
    """Port of nccl-tests ``getFloatStr`` (src/util.cu)."""
    power, limit = 0, 1
    while value >= limit:
        power, limit = power + 1, limit * 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


@st.composite
def nccl_tables(draw):
    lines = ["# Collective test starting: all_reduce_perf", *DEVICE_LINES[:2], *TABLE_HEADER]
    expected, corrupted = {}, set()
    size = 8
    for _ in range(draw(st.integers(1, 12))):
        size *= 2
        halves, values = [], []
        for _ in range(2):
            numbers = [draw(st.floats(0.01, 5e7)), draw(st.floats(0, 5e5)), draw(st.floats(0, 5e5))]
            texts = [float_str(numbers[0], 7), float_str(numbers[1], 6), float_str(numbers[2], 6)]
            wrong = draw(st.one_of(st.none(), st.integers(0, 9)))
            texts.append("   N/A" if wrong is None else f"{wrong:6d}")
            halves.append("  " + "  ".join(texts))
            values.append([float(t) for t in texts[:3]] + [np.nan if wrong is None else wrong])
        line = f"{size:12d}  {size // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}" + "".join(halves)
        number = len(lines) + 1
        if draw(st.integers(0, 3)) == 0:
            line = _corrupt(draw, line)
            corrupted.add(number)
        else:
            expected[number] = (size, size // 4, *values[0], *values[1])
        lines.append(line)
    return lines, expected, corrupted


def _corrupt(draw, line):
    """Insert garbage inside a token, or cut the row inside its last token or earlier."""
    tokens = [(m, m + len(t)) for m, t in _token_spans(line)]
    if draw(st.booleans()):
        start, stop = draw(st.sampled_from(tokens))
        # a row is recognised by its leading number: garbage in front of it would make the
        # line something else (a comment, an INFO line), so the first digit stays first
        position = draw(st.integers(start + (start == tokens[0][0]), stop))
        return line[:position] + draw(st.sampled_from(GARBAGE)) + line[position:]
    first_start = tokens[0][0]
    last_start, last_stop = tokens[-1]
    return line[
        : draw(
            st.integers(
                first_start + 1, last_start if last_stop - last_start == 1 else last_stop - 1
            )
        )
    ]


def _token_spans(line):
    position = 0
    for token in line.split():
        position = line.index(token, position)
        yield position, token
        position += len(token)


@_SETTINGS
@given(table=nccl_tables())
def test_property_intact_rows_exact_and_corrupted_counted(tmp_path, table):
    lines, expected, corrupted = table
    path = _write(tmp_path, "\n".join(lines) + "\n")
    if not expected:
        with pytest.raises(InputFileError):
            parse_nccl_tests(path)
        return
    result = parse_nccl_tests(path)
    assert result.skipped_lines == len(corrupted)
    results = result.results
    assert results["line"].tolist() == sorted(expected)
    columns = [
        "size_bytes",
        "count",
        "time_us",
        "algbw_gbytes_per_s",
        "busbw_gbytes_per_s",
        "wrong",
        "inplace_time_us",
        "inplace_algbw_gbytes_per_s",
        "inplace_busbw_gbytes_per_s",
        "inplace_wrong",
    ]
    for line, row in zip(results["line"], results[columns].itertuples(index=False), strict=True):
        np.testing.assert_array_equal(
            np.array(row, dtype=float), np.array(expected[line], dtype=float)
        )


@_SETTINGS
@given(data=st.data())
def test_property_raw_byte_damage_raises_only_input_file_error(tmp_path, data):
    raw = bytearray(DOC_EXAMPLE.encode())
    for _ in range(data.draw(st.integers(1, 12))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "damaged.log"
    path.write_bytes(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
    try:
        result = parse_nccl_tests(path)
    except InputFileError as error:
        assert error.path == str(path)
    else:
        assert len(result.results) == 1


@_SETTINGS
@given(cut=st.floats(0.0, 0.999))
def test_property_truncated_json_names_file_and_line(tmp_path, cut):
    text = json.dumps(_json_report(), indent=1)
    path = _write(tmp_path, text[: int(cut * len(text))], "report.json")
    with pytest.raises(InputFileError) as error:
        parse_nccl_tests(path, format="json")
    assert error.value.path == str(path)
    assert error.value.line is not None
