"""Tests of trainscale.ingest.power: nvidia-smi CSV, dcgmi dmon and alignment with steps.

Reference: ../shared/reference/log-formats.md §2.1 (nvidia-smi ``--format=csv``: header
``timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]``, values with units
unless ``nounits``, ``[N/A]``/``[Not Supported]``, GPU = position in the poll block without
``index``, rows of one poll need not share a timestamp) and §2.2 (dcgmi dmon ``#Entity`` /
``ID`` header rows repeating, ``GPU 0`` entity, ``N/A``, blank sentinels). The DCGM blank values
are those of dcgm_structs.h (int32 0x7ffffff0, int64 0x7ffffffffffffff0, fp64 2**47).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from trainscale.errors import InputFileError
from trainscale.ingest.power import align_power_to_steps, parse_power_log
from trainscale.ingest.power_dcgmi import parse_dcgmi_dmon
from trainscale.ingest.power_smi import parse_nvidia_smi_csv

HEADER = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]"


def _write(tmp_path, text, name="power.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_nvidia_smi_with_units_and_missing_values(tmp_path):
    text = "\n".join(
        [
            HEADER,
            "2025/01/01 12:00:00.100, 0, 557.69 W, 86 %, 41285 MiB",
            "2025/01/01 12:00:00.105, 1, [N/A], 85 %, 41285 MiB",
            "2025/01/01 12:00:01.100, 0, 550.00 W, 86 %, 41285 MiB",
            "2025/01/01 12:00:01.101, 1, 551.00 W, [Not Supported], 41285 MiB",
            HEADER,  # a second capture appended to the same file
            "2025/01/01 12:00:02.100, 0, 549.50 W, 86 %, 40000 MiB",
        ]
    )
    log = parse_power_log(_write(tmp_path, text))
    assert log.format == "nvidia-smi"
    assert log.skipped_lines == 0
    s = log.samples
    assert list(s.columns[:4]) == ["sample", "timestamp", "gpu_index", "power_w"]
    assert s["gpu_index"].tolist() == [0, 1, 0, 1, 0]
    assert s["sample"].tolist() == [0, 0, 1, 1, 2]
    assert s["power_w"].tolist()[0] == 557.69
    assert np.isnan(s["power_w"].iloc[1])
    assert np.isnan(s["util_gpu_pct"].iloc[3])
    assert s["mem_used_mib"].iloc[4] == 40000
    assert s["timestamp"].iloc[0] == pd.Timestamp("2025-01-01 12:00:00.100")
    assert s["line"].tolist() == [2, 3, 4, 5, 7]


def test_nvidia_smi_nounits_and_noheader(tmp_path):
    nounits = "\n".join([HEADER, "2025/01/01 12:00:00.100, 3, 300.25, 50, 1024"])
    row = parse_nvidia_smi_csv(_write(tmp_path, nounits)).samples.iloc[0]
    assert (row["gpu_index"], row["power_w"], row["util_gpu_pct"]) == (3, 300.25, 50)
    noheader = _write(tmp_path, "2025/01/01 12:00:00.100, 3, 300.25 W\n", "noheader.csv")
    with pytest.raises(InputFileError, match="pass the --query-gpu field list"):
        parse_nvidia_smi_csv(noheader)
    parsed = parse_nvidia_smi_csv(noheader, columns=["timestamp", "index", "power.draw [W]"])
    assert parsed.samples["power_w"].tolist() == [300.25]


def test_nvidia_smi_wrong_unit_is_garbled(tmp_path):
    text = "\n".join(
        [
            HEADER,
            "2025/01/01 12:00:00.100, 0, 557.69 MiB, 86 %, 41285 MiB",
            "2025/01/01 12:00:00.100, 1, 557.69 W, 86 %, 41285 MiB",
        ]
    )
    log = parse_nvidia_smi_csv(_write(tmp_path, text))
    assert log.skipped_lines == 1
    assert log.samples["gpu_index"].tolist() == [1]


def _poll_rows(n_gpus, n_polls, *, jitter_ms):
    """Rows of `n_polls` polls of `n_gpus` GPUs; within a poll the timestamps creep forward
    (the public 8 x H100 capture of log-formats.md §2.1 had 7,576 distinct timestamps for
    5,704 polls), between polls 1 s passes."""
    start = datetime(2025, 1, 1, 12, 0, 0)
    rows = []
    for poll in range(n_polls):
        for gpu in range(n_gpus):
            when = start + timedelta(seconds=poll, milliseconds=jitter_ms * gpu)
            rows.append((when, 100.0 + 10 * gpu + poll))
    return rows


@pytest.mark.parametrize("jitter_ms", [0, 3])
def test_nvidia_smi_without_index_uses_position_in_poll(tmp_path, jitter_ms):
    rows = _poll_rows(8, 5, jitter_ms=jitter_ms)
    text = "timestamp, power.draw [W]\n" + "\n".join(
        f"{w:%Y/%m/%d %H:%M:%S}.{w.microsecond // 1000:03d}, {p:.2f} W" for w, p in rows
    )
    samples = parse_nvidia_smi_csv(_write(tmp_path, text)).samples
    assert samples["gpu_index"].tolist() == [g for _ in range(5) for g in range(8)]
    assert samples["sample"].tolist() == [p for p in range(5) for _ in range(8)]
    assert samples["power_w"].tolist() == [p for _, p in rows]
    explicit = parse_nvidia_smi_csv(_write(tmp_path, text), gpus_per_poll=4).samples
    assert explicit["gpu_index"].tolist()[:8] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_nvidia_smi_gpu_from_uuid_and_instant_power(tmp_path):
    text = "\n".join(
        [
            "timestamp, uuid, power.draw.instant [W]",
            "2025/01/01 12:00:00.000, GPU-aaa, 100.00 W",
            "2025/01/01 12:00:00.000, GPU-bbb, 200.00 W",
            "2025/01/01 12:00:01.000, GPU-aaa, 110.00 W",
            "2025/01/01 12:00:01.000, GPU-bbb, 210.00 W",
        ]
    )
    samples = parse_nvidia_smi_csv(_write(tmp_path, text)).samples
    assert samples["gpu_index"].tolist() == [0, 1, 0, 1]
    assert samples["sample"].tolist() == [0, 0, 1, 1]
    assert samples["power_w"].tolist() == [100, 200, 110, 210]


def test_nvidia_smi_damaged_uuid_does_not_invent_a_gpu(tmp_path):
    text = "\n".join(
        [
            "timestamp, uuid, power.draw [W]",
            "2025/01/01 12:00:00.000, GPU-aaa, 100.00 W",
            "2025/01/01 12:00:01.000, GPU-a#a, 110.00 W",
        ]
    )
    log = parse_nvidia_smi_csv(_write(tmp_path, text))
    assert log.skipped_lines == 1
    assert log.samples["gpu_index"].tolist() == [0]


def test_nvidia_smi_without_index_or_timestamps_needs_gpus_per_poll(tmp_path):
    path = _write(tmp_path, "power.draw [W]\n100.00 W\n200.00 W\n")
    with pytest.raises(InputFileError, match="gpus_per_poll"):
        parse_nvidia_smi_csv(path)
    assert parse_nvidia_smi_csv(path, gpus_per_poll=2).samples["gpu_index"].tolist() == [0, 1]


DCGM_TEXT = """\
#Entity   POWER   TOTEC       GPUTL
ID        W       mJ          %
GPU 0     120.5   1234567     45
GPU 1     N/A     2147483632  46
GPU 0     121.5   3234567890  47
GPU 1     122.5   1234569     9223372036854775792
#Entity   POWER   TOTEC       GPUTL
ID        W       mJ          %
GPU 0     140737488355328.000   1234570     48
GPU 1     124.5   12#34570    48
GPU-I 3   10.0    55          1
GPU 0     125.5
"""


def test_dcgmi_dmon(tmp_path):
    log = parse_power_log(
        _write(tmp_path, DCGM_TEXT, "dmon.txt"), start_time="2025-01-01 12:00:00", interval_s=0.5
    )
    assert log.format == "dcgmi"
    assert log.skipped_lines == 2  # the garbled TOTEC and the cut-off last row
    s = log.samples
    assert s["entity"].tolist() == ["GPU", "GPU", "GPU", "GPU", "GPU", "GPU-I"]
    assert s["gpu_index"].tolist()[:5] == [0, 1, 0, 1, 0]
    assert pd.isna(s["gpu_index"].iloc[5])
    assert s["sample"].tolist() == [0, 0, 1, 1, 2, 2]
    assert s["timestamp"].iloc[2] == pd.Timestamp("2025-01-01 12:00:00.500")
    # N/A and the int32 / int64 / fp64 blank sentinels are missing values ...
    assert np.isnan(s["power_w"].iloc[1])
    assert np.isnan(s["total_energy_j"].iloc[1])
    assert np.isnan(s["util_gpu_pct"].iloc[3])
    assert np.isnan(s["power_w"].iloc[4])
    # ... but a large energy counter above 2**31 mJ is a real value (mJ → J)
    assert s["total_energy_j"].iloc[2] == pytest.approx(3234567.890)
    assert s["power_w"].iloc[0] == 120.5


def test_dcgmi_without_start_time_has_no_timestamps(tmp_path):
    samples = parse_dcgmi_dmon(_write(tmp_path, DCGM_TEXT, "dmon.txt")).samples
    assert samples["timestamp"].isna().all()
    with pytest.raises(InputFileError, match="naive"):
        parse_dcgmi_dmon(
            _write(tmp_path, DCGM_TEXT, "dmon.txt"), start_time="2025-01-01T12:00:00+02:00"
        )


def test_align_power_to_steps():
    power = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(
                [
                    "2025-01-01 12:00:00.5",
                    "2025-01-01 12:00:00.5",
                    "2025-01-01 12:00:01.0",
                    "2025-01-01 12:00:01.5",
                    "2025-01-01 12:00:01.5",
                    "2025-01-01 12:00:09.0",
                ]
            ),
            "gpu_index": pd.array([0, 1, 0, 0, 1, 0], dtype="Int64"),
            "power_w": [100.0, 300.0, 200.0, 400.0, np.nan, 999.0],
        }
    )
    steps = pd.DataFrame(
        {
            "step": [1, 2, 3, 4],
            "timestamp": pd.to_datetime(
                ["2025-01-01 12:00:00", "2025-01-01 12:00:01", pd.NaT, "2025-01-01 12:00:02"]
            ),
        }
    )
    out = align_power_to_steps(power, steps)
    assert out["step"].tolist() == [1, 2, 4]  # step 3 has no timestamp
    assert np.isnan(out["power_w_mean"].iloc[0])  # no interval before the first step
    # step 2: (12:00:00, 12:00:01] holds GPU0 100 and 200 (mean 150), GPU1 300.
    assert out.loc[1, ["power_w_gpu0", "power_w_gpu1", "power_w_mean"]].tolist() == [
        150.0,
        300.0,
        225.0,
    ]
    assert out.loc[1, "n_samples"] == 3
    assert out.loc[2, "power_w_gpu0"] == 400.0
    assert np.isnan(out.loc[2, "power_w_gpu1"])
    assert out.loc[2, "interval_s"] == 1.0


@pytest.mark.parametrize("content", [b"\x00\x01\x02" * 100, b"", b"hello\nworld\n"])
def test_bad_power_files(tmp_path, content):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(InputFileError) as error:
        parse_power_log(path)
    assert error.value.path == str(path)


# --- property tests ----------------------------------------------------------------------------

GARBAGE = "#@!?~^$&*;<>{}|\\\"'`="
_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def smi_logs(draw):
    units = draw(st.booleans())
    n_gpus = draw(st.integers(1, 4))
    lines = ["timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    expected, corrupted = {}, set()
    when = datetime(2025, 1, 1)
    for _ in range(draw(st.integers(1, 5))):
        when += timedelta(milliseconds=draw(st.integers(1, 5000)))
        for gpu in range(n_gpus):
            power = draw(st.one_of(st.floats(0, 1000), st.none()))
            util = draw(st.integers(0, 100))
            mem = draw(st.integers(0, 200_000))
            cells = [
                f"{when:%Y/%m/%d %H:%M:%S}.{when.microsecond // 1000:03d}",
                str(gpu),
                "[N/A]" if power is None else f"{power:.2f}" + (" W" if units else ""),
                f"{util}" + (" %" if units else ""),
                f"{mem}" + (" MiB" if units else ""),
            ]
            line = ", ".join(cells)
            number = len(lines) + 1
            if draw(st.integers(0, 3)) == 0:
                line = _corrupt_cells(draw, line, cells, units)
                corrupted.add(number)
            else:
                expected[number] = (
                    gpu,
                    np.nan if power is None else float(f"{power:.2f}"),
                    util,
                    mem,
                )
            lines.append(line)
    return lines, expected, corrupted


def _corrupt_cells(draw, line, cells, units):
    """Insert garbage into a numeric cell (not into "[N/A]", which stays missing), or — when
    values carry units, so that a cut is visible — cut the line inside its last cell."""
    numeric = [k for k in range(1, 5) if not cells[k].startswith("[")]
    starts = np.cumsum([0] + [len(c) + 2 for c in cells[:-1]])
    if units and draw(st.booleans()):
        return line[: draw(st.integers(int(starts[-1]), len(line) - 1))]
    k = draw(st.sampled_from(numeric))
    position = int(starts[k]) + draw(st.integers(0, len(cells[k])))
    return line[:position] + draw(st.sampled_from(GARBAGE.replace(",", ""))) + line[position:]


@_SETTINGS
@given(log=smi_logs())
def test_property_nvidia_smi_intact_rows_exact(tmp_path, log):
    lines, expected, corrupted = log
    path = _write(tmp_path, "\n".join(lines) + "\n")
    if not expected:
        with pytest.raises(InputFileError):
            parse_nvidia_smi_csv(path)
        return
    result = parse_nvidia_smi_csv(path)
    assert result.skipped_lines == len(corrupted)
    samples = result.samples
    assert samples["line"].tolist() == sorted(expected)
    for row in samples.itertuples(index=False):
        gpu, power, util, mem = expected[row.line]
        assert row.gpu_index == gpu
        assert np.isnan(row.power_w) if np.isnan(power) else row.power_w == power
        assert (row.util_gpu_pct, row.mem_used_mib) == (util, mem)


@st.composite
def dmon_logs(draw):
    n_gpus = draw(st.integers(1, 4))
    lines, expected, corrupted = [], {}, set()
    for sample in range(draw(st.integers(1, 6))):
        if sample % 3 == 0:
            lines += ["#Entity   POWER   TOTEC       GPUTL", "ID        W       mJ          %"]
        for gpu in range(n_gpus):
            power = draw(st.floats(0, 1000))
            # a counter that equals a DCGM blank sentinel would read as missing
            energy = draw(
                st.integers(0, 10**12).filter(lambda e: not 0x7FFFFFF0 <= e <= 0x7FFFFFFF)
            )
            util = draw(st.one_of(st.integers(0, 100), st.none()))
            tokens = [
                f"GPU {gpu}",
                f"{power:.3f}",
                str(energy),
                "N/A" if util is None else str(util),
            ]
            line = "    ".join(tokens)
            number = len(lines) + 1
            if draw(st.integers(0, 3)) == 0:
                k = draw(st.integers(1, 3))
                start = len("    ".join(tokens[:k])) + 4
                position = start + draw(st.integers(0, len(tokens[k])))
                line = line[:position] + draw(st.sampled_from(GARBAGE)) + line[position:]
                corrupted.add(number)
            else:
                expected[number] = (
                    gpu,
                    float(f"{power:.3f}"),
                    energy / 1000,
                    np.nan if util is None else util,
                )
            lines.append(line)
    return lines, expected, corrupted


@_SETTINGS
@given(log=dmon_logs())
def test_property_dcgmi_intact_rows_exact(tmp_path, log):
    lines, expected, corrupted = log
    path = _write(tmp_path, "\n".join(lines) + "\n", "dmon.txt")
    if not expected:
        with pytest.raises(InputFileError):
            parse_dcgmi_dmon(path)
        return
    result = parse_dcgmi_dmon(path)
    assert result.skipped_lines == len(corrupted)
    samples = result.samples
    assert samples["line"].tolist() == sorted(expected)
    for row in samples.itertuples(index=False):
        gpu, power, energy, util = expected[row.line]
        assert (row.gpu_index, row.power_w, row.total_energy_j) == (gpu, power, energy)
        assert np.isnan(row.util_gpu_pct) if np.isnan(util) else row.util_gpu_pct == util


@_SETTINGS
@given(data=st.data(), dcgm=st.booleans())
def test_property_raw_byte_damage_raises_only_input_file_error(tmp_path, data, dcgm):
    raw = bytearray(
        DCGM_TEXT.encode()
        if dcgm
        else (
            HEADER + "\n" + "2025/01/01 12:00:00.100, 0, 557.69 W, 86 %, 41285 MiB\n" * 6
        ).encode()
    )
    for _ in range(data.draw(st.integers(1, 12))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "damaged.txt"
    path.write_bytes(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
    try:
        result = parse_power_log(path, gpus_per_poll=1) if not dcgm else parse_power_log(path)
    except InputFileError as error:
        assert error.path == str(path)
    else:
        assert len(result.samples) >= 1
