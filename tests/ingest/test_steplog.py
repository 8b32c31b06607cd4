"""Tests of trainscale.ingest.steplog: torchtitan, Megatron-LM and Megatron golden values.

Reference: ../shared/reference/log-formats.md §1.1 (torchtitan ``MetricsProcessor.log`` format
string and the public ezpz/Aurora example line), §1.2 (Megatron ``training_log`` layout, AMD
Primus pairs, golden values) and §1.3 (Megatron-DeepSpeed / BigScience). Golden values: the real
sample ``megatron_golden_values_gpt3_345m_…json`` (values read from the file in the test).
Property tests generate torchtitan and Megatron lines with known values, corrupt some of them
and check that intact lines parse to exactly the generated values.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from trainscale.errors import InputFileError
from trainscale.ingest.steplog import detect_step_format, parse_step_log
from trainscale.schema import STEP_COLUMNS, names

from ._samples import MEGATRON_GOLDEN, sample_file

# log-formats.md §1.1, the public ezpz/Aurora example line.
EZPZ_LINE = (
    "[2025-09-11 14:09:47,568581][I][components/metrics:437:log] step:  2  "
    "loss: 14.4458  grad_norm: 41.7880  memory:  8.44GiB(13.20%)  tps: 6,697  "
    "tflops: 62.15  mfu: 20.84%"
)
# log-formats.md §1.2, the Megatron layout illustration.
MEGATRON_LINE = (
    " [2025-01-01 00:00:00.000000] iteration       20/     500 | consumed samples:        10240"
    " | elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 400.0 |"
    " energy per GPU (J/iter/GPU): 700.0 | power per GPU (W/GPU): 567.0 | learning rate:"
    " 3.000000E-04 | global batch size:   512 | lm loss: 2.345678E+00 | loss scale: 1.0 |"
    " grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def _write(tmp_path, text, name="train.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_ezpz_example_line(tmp_path):
    log = parse_step_log(_write(tmp_path, "launch\n" + EZPZ_LINE + "\n"))
    assert log.format == "torchtitan"
    assert log.skipped_lines == 0
    assert list(log.steps.columns) == names(STEP_COLUMNS)
    row = log.steps.iloc[0]
    assert (row["step"], row["line"]) == (2, 2)
    assert row["loss"] == 14.4458
    assert row["mem_gib"] == 8.44
    assert row["tokens_per_s_per_gpu"] == 6697
    assert row["tflops_per_gpu"] == 62.15
    assert row["mfu"] == 20.84 / 100  # printed in percent
    assert row["timestamp"] == pd.Timestamp("2025-09-11 14:09:47.568581")
    assert math.isnan(row["step_time_s"])  # first parsed line: no previous timestamp
    assert pd.isna(row["global_batch"])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # early 2025 layout (§1.1): no grad_norm, no tflops
        (
            "[rank0]:2025-01-01 12:00:00,250 - root - INFO - step: 10  loss:  9.8765  "
            "memory: 49.50GiB(35.40%)  tps: 7,000  mfu: 41.00%",
            {
                "step": 10,
                "loss": 9.8765,
                "tokens_per_s_per_gpu": 7000,
                "mfu": 41.00 / 100,
                "tflops_per_gpu": math.nan,
                "timestamp": pd.Timestamp("2025-01-01 12:00:00.250"),
            },
        ),
        # wps instead of tps, thousands separators in tflops, nan loss, [titan] tag
        (
            "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - step: 3  loss:     nan  "
            "grad_norm:     inf  memory: 80.00GiB(100.00%)  wps: 1,234,567  "
            "tflops: 1,234.56  mfu: 99.99%",
            {
                "step": 3,
                "loss": math.nan,
                "tokens_per_s_per_gpu": 1_234_567,
                "tflops_per_gpu": 1234.56,
                "mfu": 99.99 / 100,
                "mem_gib": 80.0,
            },
        ),
        # ANSI colours around each field (torchtitan default), no timestamp prefix
        (
            "\x1b[31mstep:  1  \x1b[32mloss: 12.2345  \x1b[33mgrad_norm:  3.1000  "
            "\x1b[34mmemory: 30.12GiB(31.70%)  \x1b[35mtps: 1,234  \x1b[36mtflops: 56.78  "
            "\x1b[35mmfu: 5.74%\x1b[39m",
            {
                "step": 1,
                "loss": 12.2345,
                "tokens_per_s_per_gpu": 1234,
                "tflops_per_gpu": 56.78,
                "mfu": 5.74 / 100,
                "timestamp": pd.NaT,
            },
        ),
    ],
)
def test_torchtitan_layouts(tmp_path, line, expected):
    row = parse_step_log(_write(tmp_path, line + "\n")).steps.iloc[0]
    for column, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(row[column]), column
        elif value is pd.NaT:
            assert pd.isna(row[column])
        else:
            assert row[column] == value, column


def test_torchtitan_step_time_from_timestamps(tmp_path):
    lines = [
        "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - step:  1  loss: 10.0000  "
        "memory: 10.00GiB(10.00%)  tps: 100  mfu: 1.00%",
        "[rank0]:[titan] 2025-01-01 12:00:05,000 - root - INFO - step: 10  loss:  9.0000  "
        "memory: 10.00GiB(10.00%)  tps: 100  mfu: 1.00%",
        "[rank0]:[titan] 2025-01-01 12:00:06,500 - root - INFO - step: 11  loss:  8.0000  "
        "memory: 10.00GiB(10.00%)  tps: 100  mfu: 1.00%",
    ]
    steps = parse_step_log(_write(tmp_path, "\n".join(lines))).steps
    assert math.isnan(steps["step_time_s"].iloc[0])
    assert steps["step_time_s"].iloc[1] == pytest.approx(5.0 / 9)
    assert steps["step_time_s"].iloc[2] == pytest.approx(1.5)


def test_megatron_layout_line(tmp_path):
    log = parse_step_log(_write(tmp_path, "> building model\n" + MEGATRON_LINE + "\n"))
    assert log.format == "megatron"
    row = log.steps.iloc[0]
    assert (row["step"], row["line"]) == (20, 2)
    assert row["timestamp"] == pd.Timestamp("2025-01-01 00:00:00")
    assert row["step_time_s"] == pytest.approx(1.2345)
    assert row["tflops_per_gpu"] == 400.0
    assert row["energy_j_per_gpu"] == 700.0
    assert row["power_w_per_gpu"] == 567.0
    assert row["loss"] == 2.345678
    assert row["global_batch"] == 512
    assert math.isnan(row["mfu"]) and math.isnan(row["mem_gib"])


def test_megatron_forks(tmp_path):
    lines = [
        # BigScience fork: seconds, [defaultN]: prefix, older timestamp-less layout
        "[default7]: iteration      100/     200 | consumed samples:        51200 | "
        "elapsed time per iteration (s): 1.2345 | learning rate: 3.000E-04 | "
        "global batch size:   512 | lm loss: 2.345678E+00 | loss scale: 1.0 | "
        "grad norm: 0.812 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 | samples per second: 414.7 | "
        "tokens per gpu per second (tgs): 1234.567 | TFLOPs: 150.20 |",
        # AMD Primus: current/average pairs, take the current value
        " iteration       30/     500 | consumed samples:        15360 | "
        "elapsed time per iteration (ms): 1200.0/1210.5 | "
        "throughput per GPU (TFLOP/s/GPU): 410.1/405.2 | "
        "tokens per GPU (tokens/s/GPU): 7000.1/6990.0 | global batch size:   512 | "
        "lm loss: 2.200000E+00 |",
        # older releases: timestamp without fraction
        " [2024-05-01 10:11:12] iteration       40/     500 | consumed samples:        20480 | "
        "elapsed time per iteration (ms): 999.9 | global batch size:   512 | "
        "lm loss: 2.100000E+00 | loss scale: 1.0 |",
    ]
    # One layout per file: in one file, steps 100, 30, 40 would go backwards (an error).
    frames = []
    for i, line in enumerate(lines):
        folder = tmp_path / str(i)
        folder.mkdir()
        frames.append(parse_step_log(_write(folder, line + "\n")).steps)
    steps = pd.concat(frames, ignore_index=True)
    assert steps["step"].tolist() == [100, 30, 40]
    assert steps["step_time_s"].tolist() == pytest.approx([1.2345, 1.2, 0.9999])
    assert steps["tokens_per_s_per_gpu"].tolist()[:2] == [1234.567, 7000.1]
    assert steps["tflops_per_gpu"].iloc[1] == 410.1
    assert math.isnan(steps["tflops_per_gpu"].iloc[0])  # DeepSpeed TFLOPs are hardware FLOPs
    assert steps["timestamp"].iloc[2] == pd.Timestamp("2024-05-01 10:11:12")


def test_garbled_lines_are_counted_not_guessed(tmp_path):
    good = MEGATRON_LINE
    text = "\n".join(
        [
            good,
            good.replace("1234.5", "12#34.5"),  # garbled value
            good[:-40],  # truncated: no closing "|"
            good.replace("iteration       20", "iteration       21"),
        ]
    )
    log = parse_step_log(_write(tmp_path, text))
    assert log.steps["step"].tolist() == [20, 21]
    assert log.skipped_lines == 2
    assert log.skipped_line_numbers == (2, 3)


def test_megatron_golden_values_sample():
    path = sample_file(MEGATRON_GOLDEN)
    document = json.loads(path.read_text())
    log = parse_step_log(path)
    assert log.format == "megatron_golden"
    assert log.skipped_lines == 0
    steps = log.steps
    times = document["iteration-time"]["values"]
    assert steps["step"].tolist() == sorted(int(s) for s in times)
    assert steps["step_time_s"].tolist() == [times[str(s)] for s in steps["step"]]
    losses = document["lm loss"]["values"]
    assert steps["loss"].tolist() == [losses[str(s)] for s in steps["step"]]
    peak = document["mem-max-allocated-bytes"]["values"]
    assert steps["mem_gib"].tolist() == [peak[str(s)] / 2**30 for s in steps["step"]]
    assert steps["line"].isna().all() and steps["timestamp"].isna().all()
    assert steps["step_time_s"].iloc[0] == 7.61967  # README: warm-up step 1 = 7.62 s


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4, "not a text file"),
        (b"", "no training step line"),
        (b"INFO starting\nINFO done\n", "no training step line"),
        (b"step: 1  loss: oops\n", "none could be parsed"),
    ],
)
def test_bad_files_raise(tmp_path, content, message):
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as error:
        parse_step_log(path)
    assert error.value.path == str(path)


def test_truncated_golden_json_names_file_and_line(tmp_path):
    path = tmp_path / "golden.json"
    text = sample_file(MEGATRON_GOLDEN).read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InputFileError) as error:
        parse_step_log(path)
    assert error.value.path == str(path)
    assert error.value.line == text[: len(text) // 2].count("\n") + 1


def test_golden_value_that_is_not_a_number(tmp_path):
    path = tmp_path / "golden.json"
    path.write_text('{"iteration-time": {"values": {"1": "fast"}}}')
    with pytest.raises(InputFileError, match="not a number"):
        parse_step_log(path)


def test_detect_prefers_the_majority_format(tmp_path):
    path = _write(tmp_path, "\n".join([EZPZ_LINE, MEGATRON_LINE, EZPZ_LINE]))
    assert detect_step_format(path) == "torchtitan"
    assert parse_step_log(path, format="megatron").steps["step"].tolist() == [20]


# --- property tests ----------------------------------------------------------------------------

GARBAGE = "#@!?~^$&*;<>{}\\\"'`="  # no "|": it separates Megatron fields
_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_T0 = datetime(2025, 3, 1, 8, 0, 0)


@st.composite
def titan_logs(draw):
    """(lines, expected rows by line number, corrupted line numbers)."""
    n = draw(st.integers(1, 12))
    grad_norm = draw(st.booleans())
    tflops = draw(st.booleans())
    token_key = draw(st.sampled_from(["tps", "wps"]))
    prefix = draw(st.sampled_from(["none", "titan", "old", "ezpz"]))
    ansi = draw(st.booleans())
    lines, expected, corrupted = [], {}, set()
    step, when = draw(st.integers(1, 5)), _T0
    for _ in range(n):
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.text(alphabet="abcdefgh XYZ-_[]0123456789", max_size=50)))
        step += draw(st.integers(1, 10))
        when += timedelta(milliseconds=draw(st.integers(1, 100_000)))
        values = {
            "loss": draw(st.one_of(st.floats(0, 20), st.sampled_from([math.nan, math.inf]))),
            "grad_norm": draw(st.floats(0, 100)),
            "mem": draw(st.floats(0, 192)),
            "mem_pct": draw(st.floats(0, 100)),
            "tps": draw(st.integers(0, 50_000_000)),
            "tflops": draw(st.floats(0, 20_000)),
            "mfu": draw(st.floats(0, 100)),
        }
        line = _titan_line(step, when, values, grad_norm, tflops, token_key, prefix, ansi)
        if draw(st.integers(0, 3)) == 0:
            line = _corrupt_after(draw, line, line.index("loss:") + 5, line.rindex("%"))
            corrupted.add(len(lines) + 1)
        else:
            expected[len(lines) + 1] = _titan_expected(step, when, values, tflops, prefix)
        lines.append(line)
    return lines, expected, corrupted


def _titan_line(step, when, v, grad_norm, tflops, token_key, prefix, ansi):
    fields = [f"step: {step:2}", f"loss: {v['loss']:7.4f}"]
    if grad_norm:
        fields.append(f"grad_norm: {v['grad_norm']:7.4f}")
    fields.append(f"memory: {v['mem']:5.2f}GiB({v['mem_pct']:.2f}%)")
    fields.append(f"{token_key}: {v['tps']:,}")
    if tflops:
        fields.append(f"tflops: {v['tflops']:,.2f}")
    fields.append(f"mfu: {v['mfu']:.2f}%")
    if ansi:
        fields = [f"\x1b[3{k % 7 + 1}m{f}" for k, f in enumerate(fields)]
    body = "  ".join(fields) + ("\x1b[39m" if ansi else "")
    stamp_ms = when.strftime("%Y-%m-%d %H:%M:%S,") + f"{when.microsecond // 1000:03d}"
    return {
        "none": "",
        "titan": f"[rank0]:[titan] {stamp_ms} - root - INFO - ",
        "old": f"[rank0]:{stamp_ms} - root - INFO - ",
        "ezpz": f"[{when:%Y-%m-%d %H:%M:%S,%f}][I][components/metrics:437:log] ",
    }[prefix] + body


def _titan_expected(step, when, v, tflops, prefix):
    return {
        "step": step,
        "loss": float(f"{v['loss']:7.4f}"),
        "mem_gib": float(f"{v['mem']:5.2f}"),
        "tokens_per_s_per_gpu": float(v["tps"]),
        "tflops_per_gpu": float(f"{v['tflops']:.2f}") if tflops else math.nan,
        "mfu": float(f"{v['mfu']:.2f}") / 100,
        "timestamp": None
        if prefix == "none"
        else (
            when if prefix == "ezpz" else when.replace(microsecond=when.microsecond // 1000 * 1000)
        ),
    }


def _corrupt_after(draw, line, start, stop):
    """Insert a character no step line can hold (anywhere from start on; the end of the line
    and the spot after the last '%' are drawn often), or cut the line between start and stop."""
    if draw(st.booleans()):
        position = draw(
            st.one_of(st.integers(start, len(line)), st.sampled_from([len(line), stop + 1]))
        )
        return line[:position] + draw(st.sampled_from(GARBAGE)) + line[position:]
    return line[: draw(st.integers(start, stop - 1))]


def _check_rows(steps, expected):
    assert steps["line"].tolist() == sorted(expected)
    for row in steps.itertuples(index=False):
        want = expected[row.line]
        for column, value in want.items():
            if column == "timestamp":
                assert (
                    pd.isna(row.timestamp)
                    if value is None
                    else row.timestamp == pd.Timestamp(value)
                )
            elif isinstance(value, float) and math.isnan(value):
                assert math.isnan(getattr(row, column)), column
            else:
                assert getattr(row, column) == value, column


@_SETTINGS
@given(log=titan_logs())
def test_property_torchtitan_intact_lines_exact_and_corrupted_counted(tmp_path, log):
    lines, expected, corrupted = log
    path = _write(tmp_path, "\n".join(lines) + "\n")
    if not expected:
        with pytest.raises(InputFileError):
            parse_step_log(path, format="torchtitan")
        return
    result = parse_step_log(path, format="torchtitan")
    assert result.skipped_lines == len(corrupted)
    assert set(result.skipped_line_numbers) == corrupted
    _check_rows(result.steps, expected)
    _check_titan_step_times(result.steps, expected)


def _check_titan_step_times(steps, expected):
    previous = None
    for row in steps.itertuples(index=False):
        stamp = expected[row.line]["timestamp"]
        if previous is None or stamp is None or previous[1] is None or row.step <= previous[0]:
            assert math.isnan(row.step_time_s)
        else:
            seconds = (stamp - previous[1]).total_seconds()
            assert row.step_time_s == pytest.approx(seconds / (row.step - previous[0]), rel=1e-12)
        previous = (row.step, stamp)


@st.composite
def megatron_logs(draw):
    n = draw(st.integers(1, 10))
    seconds_key = draw(st.booleans())
    primus = draw(st.booleans())
    energy = draw(st.booleans())
    stamped = draw(st.booleans())
    lines, expected, corrupted = [], {}, set()
    step, when = draw(st.integers(1, 20)), _T0
    for _ in range(n):
        if draw(st.booleans()):
            lines.append(
                "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0"
            )
        step += draw(st.integers(1, 50))
        when += timedelta(seconds=draw(st.integers(1, 1000)))
        v = {
            "time": draw(st.floats(0.01, 1e5)),
            "avg": draw(st.floats(0.01, 1e5)),
            "tflops": draw(st.floats(0, 5000)),
            "energy": draw(st.floats(0, 1e5)),
            "power": draw(st.floats(0, 2000)),
            "batch": draw(st.integers(1, 100_000)),
            "loss": draw(st.floats(0, 20)),
            "lr": draw(st.floats(0, 1)),
        }
        line, parts = _megatron_line(step, when, v, seconds_key, primus, energy, stamped)
        if draw(st.integers(0, 3)) == 0:
            line = _corrupt_megatron(draw, line, parts)
            corrupted.add(len(lines) + 1)
        else:
            expected[len(lines) + 1] = _megatron_expected(
                step, when, v, seconds_key, energy, stamped
            )
        lines.append(line)
    return lines, expected, corrupted


def _megatron_line(step, when, v, seconds_key, primus, energy, stamped):
    time_text = f"{v['time']:.4f}" if seconds_key else f"{v['time']:.1f}"
    if primus:
        time_text += f"/{v['avg']:.1f}"
    unit = "s" if seconds_key else "ms"
    pairs = [
        ("consumed samples", f"{step * 512:12d}"),
        (f"elapsed time per iteration ({unit})", time_text),
        ("throughput per GPU (TFLOP/s/GPU)", f"{v['tflops']:.1f}"),
    ]
    if energy:
        pairs += [
            ("energy per GPU (J/iter/GPU)", f"{v['energy']:.1f}"),
            ("power per GPU (W/GPU)", f"{v['power']:.1f}"),
        ]
    pairs += [
        ("learning rate", f"{v['lr']:.6E}"),
        ("global batch size", f"{v['batch']:5d}"),
        ("lm loss", f"{v['loss']:.6E}"),
        ("loss scale", "1.0"),
        ("number of skipped iterations", "  0"),
    ]
    prefix = f" [{when:%Y-%m-%d %H:%M:%S.%f}]" if stamped else ""
    head = f"{prefix} iteration {step:8d}/{99_999_999:8d} |"
    line, values = head, []
    for key, text in pairs:
        start = len(line) + len(f" {key}: ")
        line += f" {key}: {text} |"
        values.append((start, start + len(text)))
    return line, values


def _megatron_expected(step, when, v, seconds_key, energy, stamped):
    time_s = float(f"{v['time']:.4f}") if seconds_key else float(f"{v['time']:.1f}") / 1000
    return {
        "step": step,
        "step_time_s": time_s,
        "tflops_per_gpu": float(f"{v['tflops']:.1f}"),
        "energy_j_per_gpu": float(f"{v['energy']:.1f}") if energy else math.nan,
        "power_w_per_gpu": float(f"{v['power']:.1f}") if energy else math.nan,
        "global_batch": v["batch"],
        "loss": float(f"{v['loss']:.6E}"),
        "timestamp": when if stamped else None,
    }


def _corrupt_megatron(draw, line, values):
    if draw(st.booleans()):
        start, stop = draw(st.sampled_from(values))
        position = draw(st.integers(start, stop))
        return line[:position] + draw(st.sampled_from(GARBAGE)) + line[position:]
    cut = line[: draw(st.integers(values[0][0], len(line) - 2))].rstrip()
    return cut[:-1] if cut.endswith("|") else cut


@_SETTINGS
@given(log=megatron_logs())
def test_property_megatron_intact_lines_exact_and_corrupted_counted(tmp_path, log):
    lines, expected, corrupted = log
    path = _write(tmp_path, "\n".join(lines) + "\n")
    if not expected:
        with pytest.raises(InputFileError):
            parse_step_log(path, format="megatron")
        return
    result = parse_step_log(path, format="megatron")
    assert result.skipped_lines == len(corrupted)
    _check_rows(result.steps, expected)


@_SETTINGS
@given(log=titan_logs(), data=st.data())
def test_property_random_character_damage_never_changes_intact_lines(tmp_path, log, data):
    lines, expected, _ = log
    damaged = set()
    for _ in range(data.draw(st.integers(1, 5))):
        k = data.draw(st.integers(0, len(lines) - 1))
        if not lines[k]:
            continue
        position = data.draw(st.integers(0, len(lines[k]) - 1))
        # Any character a text file can hold (surrogates cannot be written as UTF-8).
        char = data.draw(st.characters(exclude_characters="\n", exclude_categories=("Cs",)))
        lines[k] = lines[k][:position] + char + lines[k][position + 1 :]
        damaged.add(k + 1)
    intact = {line: want for line, want in expected.items() if line not in damaged}
    path = _write(tmp_path, "\n".join(lines) + "\n")
    try:
        result = parse_step_log(path, format="torchtitan")
    except InputFileError:
        assert not intact
        return
    rows = result.steps[result.steps["line"].isin(list(intact))]
    assert rows["line"].tolist() == sorted(intact)
    _check_rows(rows.drop(columns="step_time_s"), intact)


@_SETTINGS
@given(data=st.data())
def test_property_raw_byte_damage_raises_only_input_file_error(tmp_path, data):
    raw = bytearray((EZPZ_LINE + "\n" + MEGATRON_LINE + "\n").encode() * 3)
    for _ in range(data.draw(st.integers(1, 20))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path = tmp_path / "damaged.log"
    path.write_bytes(bytes(raw[:cut]))
    try:
        result = parse_step_log(path)
    except InputFileError as error:
        assert error.path == str(path)
    else:
        assert len(result.steps) >= 1
        assert np.all(result.steps["line"].to_numpy() >= 1)


@_SETTINGS
@given(cut=st.floats(0.0, 0.999))
def test_property_truncated_golden_json_names_file_and_line(tmp_path, cut):
    text = sample_file(MEGATRON_GOLDEN).read_text()
    path = tmp_path / "golden.json"
    path.write_text(text[: int(cut * len(text))])
    with pytest.raises(InputFileError) as error:
        parse_step_log(path)
    assert error.value.path == str(path)
    assert error.value.line is not None


def _titan_log(steps: int) -> str:
    start = datetime(2025, 1, 1, 12, 0, 0)
    lines = ["[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Starting job"]
    for step in range(1, steps + 1):
        stamp = (start + timedelta(seconds=1.5 * step)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        lines.append(
            f"[rank0]:[titan] {stamp} - root - INFO - step: {step:2}  loss: {8 - step / 100:7.4f}"
            f"  memory: 40.00GiB(50.00%)  tps: {2048 + step % 7:,}  tflops: 100.00  mfu: 10.00%"
        )
    lines.insert(9, lines[8])  # an exact repeat, dropped with a warning
    return "\n".join(lines) + "\n"


def test_a_text_log_is_streamed_in_chunks_with_the_same_result(tmp_path, monkeypatch):
    """A text log is read line by line, never whole (``read_text`` is not called), and its
    timestamps are parsed in chunks: chunks of 3 rows give the same table and warnings as one
    chunk (issue 23: a 10^6-line log in under 500 MB, benchmarks/ingest_memory.py)."""
    from trainscale.ingest import _step_columns, steplog

    path = tmp_path / "train.log"
    path.write_text(_titan_log(40))
    whole = parse_step_log(path)

    def refuse(_path):
        raise AssertionError("a text log was read whole")

    monkeypatch.setattr(steplog, "read_text", refuse)
    monkeypatch.setattr(_step_columns, "_CHUNK_ROWS", 3)
    chunked = parse_step_log(path)

    pd.testing.assert_frame_equal(chunked.steps, whole.steps)
    assert chunked.warnings == whole.warnings
    assert len(whole.steps) == 40 and "1 exact duplicate step line(s) dropped" in whole.warnings[0]
    assert whole.steps["step_time_s"].iloc[1:].round(9).eq(1.5).all()
