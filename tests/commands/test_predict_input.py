"""`trainscale predict`: bad input is a one-line error naming the file, row and column; the
output's dtypes are the schema's; nothing partial is written (user trial items 7-11, 33)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainscale.cli import main
from trainscale.commands import predict as predict_command

ROW = {
    "model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": 16, "seq_len": 4096,
    "global_batch": 32, "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


def _csv(tmp_path, text: str, name: str = "in.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _table_csv(tmp_path, **changes: object):
    row = {**ROW, **changes}
    return _csv(tmp_path, ",".join(row) + "\n" + ",".join(map(str, row.values())) + "\n")


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_num_gpus_above_any_cluster_is_an_error(tmp_path, capsys):
    path = _table_csv(tmp_path, num_gpus=10**19)
    out = tmp_path / "out.csv"
    assert main(["predict", str(path), "-o", str(out)]) == 2
    err = _error(capsys)
    assert f"{path}: 1 invalid value(s)" in err
    assert "row 0, column 'num_gpus': 1e+19 is above the limit of 1,048,576 GPUs" in err
    assert not out.exists()


@pytest.mark.parametrize("gpus", [2**20 + 1, 2**53, 2**60])
def test_single_configuration_gpu_limit(gpus, capsys):
    assert main(["predict", "--model", "llama2-7b", "--gpu", "h100-sxm-80gb",
                 "--num-gpus", str(gpus)]) == 2  # fmt: skip
    assert "is above the limit of 1,048,576 GPUs" in _error(capsys)


def test_duplicate_column_names_are_named(tmp_path, capsys):
    header = ",".join(ROW) + ",num_gpus"
    path = _csv(tmp_path, header + "\n" + ",".join(map(str, ROW.values())) + ",64\n")
    assert main(["predict", str(path), "-o", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert f"{path}:" in err and "column(s) 'num_gpus' appear more than once" in err


def test_missing_column_names_the_file(tmp_path, capsys):
    row = {k: v for k, v in ROW.items() if k != "gpu"}
    path = _csv(tmp_path, ",".join(row) + "\n" + ",".join(map(str, row.values())) + "\n")
    assert main(["predict", str(path), "-o", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert f"{path}: missing column(s) gpu" in err and "row -1" not in err


def test_columns_left_out_take_the_command_lines_defaults_echoed(tmp_path, capsys):
    """A table with only the model, GPU, GPU count and tp predicts each row as the one-configuration
    form does with the same options (every other option at its default), and writes the defaults
    it used."""
    path = _csv(tmp_path, "model,gpu,num_gpus,tp\nllama3-8b,h100-sxm-80gb,16,2\n"
                "llama2-7b,a100-sxm-80gb,8,1\n")  # fmt: skip
    out = tmp_path / "out.csv"
    assert main(["predict", str(path), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"note: {path} leaves out seq_len, micro_batch, pp, sharding, recompute" in printed
    assert "global_batch dp x micro_batch" in printed
    table = pd.read_csv(out)
    assert table[["pp", "micro_batch", "seq_len"]].eq([1, 1, 4096]).all().all()
    assert list(table["sharding"]) == ["fsdp"] * 2 and list(table["recompute"]) == ["none"] * 2
    assert list(table["global_batch"]) == [8, 8]  # dp x micro-batch: 16 / 2 and 8 / 1
    for row in table.itertuples():
        one = tmp_path / f"one{row.Index}.csv"
        options = ["--model", row.model, "--gpu", row.gpu, "--num-gpus", str(row.num_gpus),
                   "--tp", str(row.tp)]  # fmt: skip
        assert main(["predict", *options, "-o", str(one)]) == 0
        expected = pd.read_csv(one).iloc[0]
        pd.testing.assert_series_equal(
            table.iloc[row.Index][expected.index], expected, check_names=False
        )


def test_text_columns_in_give_schema_dtypes_out(tmp_path):
    frame = pd.DataFrame([ROW]).astype(str)  # every column text
    path = tmp_path / "in.parquet"
    frame.to_parquet(path)
    out = tmp_path / "out.parquet"
    assert main(["predict", str(path), "-o", str(out)]) == 0
    result = pq.read_table(out).schema
    assert result.field("num_gpus").type == pa.int64()
    assert result.field("seq_len").type == pa.int64()
    assert result.field("step_time_s").type == pa.float64()
    assert result.field("fits_memory").type == pa.bool_()
    model = result.field("model").type
    assert pa.types.is_string(model) or pa.types.is_large_string(model)


def test_text_that_is_not_a_number_is_named(tmp_path, capsys):
    frame = pd.DataFrame([ROW, {**ROW, "seq_len": "4k"}]).astype(str)
    path = tmp_path / "in.parquet"
    frame.to_parquet(path)
    assert main(["predict", str(path), "-o", str(tmp_path / "o.csv")]) == 2
    assert "row 1, column 'seq_len': '4k' is not a number" in _error(capsys)


def test_list_typed_parquet_column_is_an_error(tmp_path, capsys):
    table = pa.table({**{k: [v] for k, v in ROW.items()}, "tags": [[1, 2]]})
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    assert main(["predict", str(path), "-o", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert f"{path}: column(s) 'tags' hold lists or structs" in err


def test_unwritable_output_is_one_line(tmp_path, capsys):
    path = _table_csv(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["predict", str(path), "-o", str(blocker / "out.csv")]) == 2
    err = _error(capsys).strip()
    assert err.startswith(f"trainscale predict: error: {blocker / 'out.csv'}: cannot write")
    assert len(err.splitlines()) == 1


def test_output_is_written_atomically_with_a_private_temporary(tmp_path, monkeypatch):
    path = _table_csv(tmp_path)
    out = tmp_path / "out.parquet"

    def fail(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", fail)
    assert main(["predict", str(path), "-o", str(out)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]  # no partial, no temp


def test_two_predicts_writing_one_output_do_not_collide(tmp_path):
    path = _table_csv(tmp_path)
    out = tmp_path / "out.parquet"
    command = [sys.executable, "-m", "trainscale.cli", "predict", str(path), "-o", str(out)]
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    assert len(pd.read_parquet(out)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.parquet"]


def test_broken_pipe_is_quiet():
    command = (
        f"{sys.executable} -m trainscale.cli predict --model llama2-7b --gpu h100-sxm-80gb "
        "--num-gpus 64 | head -2"
    )
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert done.returncode in (0, 141)


def test_configuration_that_does_not_fit_warns_and_exits_3(capsys):
    status = main(["predict", "--model", "llama2-70b", "--gpu", "h100-sxm-80gb", "--num-gpus",
                   "8", "--sharding", "ddp"])  # fmt: skip
    assert status == predict_command.EXIT_DOES_NOT_FIT == 3
    captured = capsys.readouterr()
    assert "warning: this configuration does NOT fit in GPU memory" in captured.err
    assert "does NOT fit" in captured.out


def test_breakdown_labels_straggler_as_waiting_not_a_collective(capsys):
    assert main(["predict", "--model", "llama2-7b", "--gpu", "h100-sxm-80gb",
                 "--num-gpus", "64"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "  straggler" not in out
    assert "waiting" in out and "for the slowest GPU inside collectives (not a collective)" in out


def test_v100_bf16_is_said_to_be_fp16(capsys):
    assert main(["predict", "--model", "llama2-7b", "--gpu", "v100-sxm-32gb",
                 "--num-gpus", "64", "--recompute", "full"]) == 0  # fmt: skip
    assert "fp16 mixed precision: this GPU has no bf16" in capsys.readouterr().out
    assert main(["predict", "--model", "llama2-7b", "--gpu", "v100-sxm-32gb",
                 "--num-gpus", "64", "--precision", "fp8"]) == 2  # fmt: skip
    assert "fp16 on a GPU without bf16 such as V100" in _error(capsys)


def test_help_shows_defaults_and_what_global_batch_does(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 4096)" in text and "(default: fsdp)" in text and "(default: none)" in text
    assert "dp x micro-batch" in text and "default: num_gpus" not in text
    assert "Exit status" in text and "3 the one configuration does not fit" in text


def test_help_shows_no_empty_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text and "(default: False)" not in text
    for name, value in predict_command.DEFAULTS.items():
        flag = "--" + name.replace("_", "-")
        assert f"{flag} " in text and f"(default: {value})" in text


_TRIAL_PLAN = ["predict", "--model", "llama2-70b", "--gpu", "a100-sxm-80gb", "--num-gpus", "512",
               "--tp", "4", "--pp", "2"]  # fmt: skip


def test_a_large_pipeline_bubble_is_warned_with_a_batch_that_shrinks_it(capsys):
    """User trial item 7: without --global-batch this plan runs one micro-batch per step, its
    bubble is about half the step, and nothing said so."""
    assert main(_TRIAL_PLAN) == 0
    captured = capsys.readouterr()
    assert "pipeline bubble" in captured.out
    warning = next(line for line in captured.err.splitlines() if "pipeline bubble is" in line)
    assert "1 micro-batch per step (global batch 64 = dp 64 x micro-batch 1 x 1)" in warning
    assert "--global-batch 512 gives 8 (4 per stage)" in warning
    share = float(warning.split("pipeline bubble is ")[1].split(" %")[0])
    assert share > 100 * predict_command.BUBBLE_WARNING_FRAC

    assert main([*_TRIAL_PLAN, "--global-batch", "512"]) == 0  # the suggestion
    captured = capsys.readouterr()
    assert "pipeline bubble is" not in captured.err
    bubble = next(line for line in captured.out.splitlines() if "pipeline bubble" in line)
    assert float(bubble.split()[-2]) < 100 * predict_command.BUBBLE_WARNING_FRAC


def test_a_table_counts_its_rows_with_a_large_bubble(tmp_path, capsys):
    path = _table_csv(tmp_path, model="llama2-70b", gpu="a100-sxm-80gb", num_gpus=512, tp=4,
                      pp=2, global_batch=64)  # fmt: skip
    assert main(["predict", str(path), "-o", str(tmp_path / "out.csv")]) == 0
    assert "1 of them spends more than 25 % of the step in the pipeline bubble" in (
        capsys.readouterr().out
    )


def test_paper_setup_reproduces_the_claims_tables_configuration(tmp_path, capsys):
    """User trial item 8: the defaults do not reproduce the paper setup (MFU 37.26 % at 128 H100
    against the claims table's 38.38 % then); --paper-setup does, the defaults stay as shown."""
    from trainscale.paper.setup import scaleout
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue

    out = tmp_path / "out.csv"
    args = ["predict", "--model", "llama2-7b", "--gpu", "h100-sxm-80gb", "--num-gpus", "128"]
    assert main([*args, "--paper-setup", "-o", str(out)]) == 0
    got = pd.read_csv(out).iloc[0]
    want = scaleout(load_calibration(), catalogue=load_catalogue(), gpu_counts=(128,)).iloc[0]
    for name in ("seq_len", "global_batch", "micro_batch", "sharding", "recompute", "precision",
                 "framework", "system", "tp", "pp"):  # fmt: skip
        assert got[name] == want[name], name
    assert got["mfu"] == pytest.approx(want["mfu"], rel=1e-9)
    mfu = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("MFU"))
    assert mfu.split()[3] == f"{100 * want['mfu']:.2f}"

    assert main([*args, "--paper-setup", "--micro-batch", "1", "-o", str(out)]) == 0
    assert pd.read_csv(out).loc[0, "micro_batch"] == 1  # an option given wins
    assert main([*args, "--paper-setup", "--num-gpus", "2048", "-o", str(out)]) == 0
    assert pd.read_csv(out).loc[0, "micro_batch"] == 1  # the local batch is 1 there
    assert main([*args, "-o", str(out)]) == 0
    plain = pd.read_csv(out).iloc[0]
    assert (plain["global_batch"], plain["micro_batch"]) == (128, 1)  # the documented defaults


def test_paper_setup_help_states_the_paper_setup_values(capsys):
    from trainscale.paper.values import (
        PAPER_FRAMEWORK,
        PAPER_GLOBAL_BATCH,
        PAPER_MICRO_BATCH,
        PAPER_SEQ_LEN,
        PAPER_SYSTEMS,
    )

    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"sequence {PAPER_SEQ_LEN:,}, global batch {PAPER_GLOBAL_BATCH:,} sequences" in text
    assert f"micro-batch {PAPER_MICRO_BATCH} (or the local batch" in text
    assert f"framework {PAPER_FRAMEWORK}" in text
    assert f"(system {PAPER_SYSTEMS['h100-sxm-80gb']})" in text
