"""`trainscale predict` on damaged tables (reliability trial 3, issue 23): every number bounded,
text read strictly, `--skip-invalid` keeps every valid row, outputs checked before they are
written, misspelt columns warned about, `0` echoed as the default used, `-o` never the input,
and CSV mistakes named for what they are. Each test fails on ad53e5e."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from trainscale.cli import main

ROW = {
    "model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": 16, "seq_len": 4096,
    "global_batch": 32, "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


def _write(tmp_path, rows: list[dict], name: str = "in.csv"):
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["predict", *map(str, argv)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err


#: (column, value above its range, the range's upper end as printed): S3, S5.
ABOVE = [
    ("layers", 10_001, "10,000"),
    ("hidden", 2**21, "1,048,576"),
    ("heads", 2**17, "65,536"),
    ("kv_heads", 2**17, "65,536"),
    ("ffn", 2**23, "4,194,304"),
    ("vocab", 2**25, "16,777,216"),
    ("seq_len", 2**40, "16,777,216"),
    ("global_batch", 2**40, "1,073,741,824"),
    ("micro_batch", 2**40, "1,073,741,824"),
    ("gpus_per_node", 10**12, "1,024"),
    ("cp", 2**21, "1,048,576"),
    ("vpp", 20_000, "10,000"),
    ("nic_gbit_per_s_per_gpu", 1e9, "100,000"),
    ("power_limit_w", 1e6, "10,000"),
]


@pytest.mark.parametrize(("name", "value", "high"), ABOVE, ids=[a[0] for a in ABOVE])
def test_every_number_above_its_range_is_named(tmp_path, capsys, name, value, high):
    path = _write(tmp_path, [{**ROW, name: value}])
    out = tmp_path / "out.csv"
    status, _, err = _run(capsys, path, "-o", out)
    assert status == 2 and not out.exists()
    assert f"{path}: " in err
    assert f"row 0, column '{name}': " in err
    assert f"is above the limit of {high}" in err
    assert f"to {high}" in err.split(f"column '{name}'")[1].splitlines()[0]


@pytest.mark.parametrize(
    ("name", "value"), [("nic_gbit_per_s_per_gpu", 1e-300), ("power_limit_w", 1e-3)]
)
def test_a_float_below_its_range_is_named(tmp_path, capsys, name, value):
    path = _write(tmp_path, [{**ROW, name: value}])
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 2
    assert f"row 0, column '{name}': 1e-300" in err or f"row 0, column '{name}': 0.001" in err
    assert "below the lower limit of 1" in err


def test_tokens_per_step_cannot_overflow(tmp_path, capsys):
    # 2^32 x 2^32 wraps int64 to 0 tokens per step: NaN metrics and negative memory (S5).
    path = _write(tmp_path, [{**ROW, "seq_len": 2**32, "global_batch": 2**32, "num_gpus": 1}])
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 2
    assert "column 'seq_len'" in err and "column 'global_batch'" in err


TEXT = [
    ("global_batch", "1,024", "write it without a thousands separator, 1024"),
    ("nic_gbit_per_s_per_gpu", "0,5", "a decimal comma; write a decimal point, 0.5"),
    ("tp", "\u22121", "its minus sign is not ASCII '-'"),
    ("nic_gbit_per_s_per_gpu", "400 Gb/s", "it carries a unit ('Gb/s')"),
    ("seq_len", "4096 tokens", "it carries a unit ('tokens')"),
]


@pytest.mark.parametrize(("name", "text", "reason"), TEXT, ids=[t[1] for t in TEXT])
def test_numbers_written_as_text_are_read_strictly(tmp_path, capsys, name, text, reason):
    path = _write(tmp_path, [ROW, {**ROW, name: text}])
    out = tmp_path / "out.csv"
    status, _, err = _run(capsys, path, "-o", out)
    assert status == 2 and not out.exists()
    assert f"row 1, column '{name}': {text!r} is not a number: {reason}" in err


def test_skip_invalid_rejects_every_bad_row_and_writes_the_valid_ones(tmp_path, capsys):
    rows = [
        ROW,
        {**ROW, "global_batch": 32.5},
        {**ROW, "global_batch": float("inf")},
        {**ROW, "seq_len": "abc"},
        {**ROW, "micro_batch": "1,024"},
        {**ROW, "num_gpus": 10**19},
        {**ROW, "tp": -1},
        {**ROW, "seq_len": 8192},
    ]
    path = _write(tmp_path, rows)
    out = tmp_path / "out.csv"
    status, stdout, _ = _run(capsys, path, "-o", out, "--skip-invalid")
    assert status == 0
    result = pd.read_csv(out)
    assert result["seq_len"].tolist() == [4096, 8192]
    rejects = pd.read_csv(tmp_path / "out.rejects.csv")
    assert rejects["row"].tolist() == [1, 2, 3, 4, 5, 6]
    assert rejects["column"].tolist() == [
        "global_batch", "global_batch", "seq_len", "micro_batch", "num_gpus", "tp",
    ]  # fmt: skip
    assert "32.5 is not a positive integer" in rejects["reason"].iloc[0]
    assert "inf is not a finite number" in rejects["reason"].iloc[1]
    assert "'abc' is not a number" in rejects["reason"].iloc[2]
    assert rejects["seq_len"].iloc[2] == "abc"  # the rejected row as the file had it
    assert "2 predicted, 6 rejected" in stdout


def test_skip_invalid_also_rejects_rows_whose_prediction_fails_the_output_checks(
    tmp_path, capsys, monkeypatch
):
    from trainscale.sim import throughput

    real = throughput.step_times

    def broken(c, *args, **kwargs):
        times = real(c, *args, **kwargs)
        step = np.where(c.plan.seq_len == 8192, float("nan"), times.step_time_s)
        return dataclasses.replace(times, step_time_s=step)

    monkeypatch.setattr(throughput, "step_times", broken)
    path = _write(tmp_path, [ROW, {**ROW, "seq_len": 8192}])
    out = tmp_path / "out.csv"
    status, _, err = _run(capsys, path, "-o", out)
    assert status == 2 and not out.exists()
    assert "row 1, column 'step_time_s': the simulator predicted nan" in err
    status, _, _ = _run(capsys, path, "-o", out, "--skip-invalid")
    assert status == 0
    assert pd.read_csv(out)["seq_len"].tolist() == [4096]
    assert pd.read_csv(tmp_path / "out.rejects.csv")["row"].tolist() == [1]


def test_mfu_above_one_is_flagged(tmp_path, capsys):
    # 16.8 M tokens of context: attention dominates and the non-causal convention counts twice
    # what a causal kernel executes (S7).
    long = {**ROW, "gpu": "a100-sxm-80gb", "num_gpus": 4, "seq_len": 2**24, "global_batch": 4,
            "recompute": "full"}  # fmt: skip
    path = _write(tmp_path, [ROW, long])
    out = tmp_path / "out.csv"
    status, stdout, _ = _run(capsys, path, "-o", out)
    assert status == 0
    result = pd.read_csv(out, keep_default_na=False)
    assert result["hfu"].iloc[1] > 1
    assert result["extrapolation"].iloc[1].endswith(f"hfu:{result['hfu'].iloc[1]:.3g}>1")
    assert "hfu:" not in result["extrapolation"].iloc[0] and result["hfu"].iloc[0] < 1
    assert "1 of them has MFU or HFU above 100 %" in stdout


@pytest.mark.parametrize(
    ("misspelt", "known"), [("framwork", "framework"), ("power_limit", "power_limit_w")]
)
def test_a_misspelt_column_is_warned_with_the_known_name(tmp_path, capsys, misspelt, known):
    path = _write(tmp_path, [{**ROW, misspelt: "megatron" if known == "framework" else 400}])
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 0
    assert f"column {misspelt!r} is not a configuration column (did you mean {known!r}?)" in err


def test_an_unrelated_extra_column_is_carried_through_silently(tmp_path, capsys):
    path = _write(tmp_path, [{**ROW, "my_label": "run a"}])
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 0 and err == ""
    assert pd.read_csv(tmp_path / "out.csv")["my_label"].tolist() == ["run a"]


def test_zero_for_the_default_is_echoed_as_the_value_used(tmp_path, capsys):
    rows = [{**ROW, "gpus_per_node": 0, "nic_gbit_per_s_per_gpu": 0},
            {**ROW, "gpus_per_node": 4, "nic_gbit_per_s_per_gpu": 100}]  # fmt: skip
    path = _write(tmp_path, rows)
    out = tmp_path / "out.csv"
    assert _run(capsys, path, "-o", out)[0] == 0
    result = pd.read_csv(out)
    # h100-sxm-80gb's default system: 8 GPUs per node, 400 Gb/s per GPU (data/hardware.yaml).
    assert result["gpus_per_node"].tolist() == [8, 4]
    assert result["nic_gbit_per_s_per_gpu"].tolist() == [400.0, 100.0]


@pytest.mark.parametrize("spelling", ["same", "dotted"])
def test_output_naming_the_input_is_refused(tmp_path, capsys, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, [ROW])
    before = path.read_bytes()
    out = "in.csv" if spelling == "same" else "./sub/../in.csv"
    (tmp_path / "sub").mkdir()
    status, _, err = _run(capsys, "in.csv", "-o", out)
    assert status == 2
    assert "names the input" in err
    assert path.read_bytes() == before


def test_an_unknown_output_format_is_refused_before_predicting(tmp_path, capsys):
    path = _write(tmp_path, [ROW])
    status, stdout, err = _run(capsys, path, "-o", tmp_path / "out.xlsx")
    assert status == 2
    assert "unknown extension for -o; use .csv or .parquet" in err
    assert "predicted" not in stdout


def test_one_row_that_does_not_fit_is_said_in_the_singular(tmp_path, capsys):
    path = _write(tmp_path, [ROW, {**ROW, "model": "llama2-70b", "num_gpus": 8, "global_batch": 8,
                                   "sharding": "ddp"}])  # fmt: skip
    status, stdout, _ = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 0
    assert "1 of them does not fit in GPU memory" in stdout


def _csv(tmp_path, text: str):
    path = tmp_path / "in.csv"
    path.write_text(text)
    return path


HEADER = ",".join(ROW)
VALUES = ",".join(map(str, ROW.values()))
STRUCTURE = {
    "spaces": (HEADER.replace(",", ", ") + "\n" + VALUES + "\n", ":1: column name(s) ' gpu'"),
    "comment": ("# my configurations\n" + HEADER + "\n" + VALUES + "\n", ":1: a comment line"),
    "comment_row": (HEADER + "\n# " + VALUES + "\n", ":2: row 0: a comment line"),
    "semicolons": (HEADER.replace(",", ";") + "\n" + VALUES.replace(",", ";") + "\n",
                   ":1: the header is separated by ';'"),
    "tabs": (HEADER.replace(",", "\t") + "\n" + VALUES.replace(",", "\t") + "\n",
             ":1: the header is separated by tabs"),
    "extra_field": (HEADER + ",power_limit_w\n" + VALUES + ",500,5\n",
                    ":2: row 0 has 13 fields, the header 12: a value holding an unquoted comma"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(STRUCTURE))
def test_csv_mistakes_are_named_for_what_they_are(tmp_path, capsys, case):
    text, expected = STRUCTURE[case]
    path = _csv(tmp_path, text)
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 2
    assert f"{path}{expected}" in err
    assert "missing column(s)" not in err


def test_an_empty_gpu_is_missing_not_nan(tmp_path, capsys):
    path = _csv(tmp_path, HEADER + "\n" + VALUES.replace("h100-sxm-80gb", "") + "\n")
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 2
    assert "row 0, column 'gpu': missing; valid: " in err and "nan" not in err


def test_an_unknown_system_is_one_error(tmp_path, capsys):
    path = _write(tmp_path, [{**ROW, "system": "my-cluster"}])
    status, _, err = _run(capsys, path, "-o", tmp_path / "out.csv")
    assert status == 2
    assert "1 invalid value(s)" in err and "unknown system 'my-cluster'" in err
    assert "holds" not in err
