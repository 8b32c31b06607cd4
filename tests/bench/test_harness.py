"""The harness end to end: real torchrun launches on CPU with gloo, then ingestion of their logs.

The done-criterion of issue 5: a 2-rank gloo bench produces logs that ingest into a row whose
tokens/s agree with the harness's own timing within 1 %. The harness times every step with
``time.perf_counter`` and writes, in the manifest, its window rate (tokens ÷ wall time of the
steady window) and its median-step rate. The ingester sees only the log: the row's tokens/s is
the median of the logged per-step ``tps`` × GPUs (compared with the harness's median-step
rate), and the log's own timestamps give the window rate independently of the harness's clock
(compared with the harness's window rate).
"""

from __future__ import annotations

import itertools
import re
import shutil
import statistics

import pandas as pd
import pytest
import yaml

from trainscale.bench.logging import format_step
from trainscale.errors import InputFileError
from trainscale.ingest.kineto import load_traces
from trainscale.ingest.manifest import load_manifest
from trainscale.ingest.runs import ingest_run
from trainscale.ingest.steplog import parse_step_log
from trainscale.sim.catalogue import load_catalogue

from .conftest import TINY

pytestmark = pytest.mark.bench

#: The catalogues a run is checked and ingested with: the shipped ones.
_CATALOGUE = load_catalogue()
SHIPPED = {"hardware": _CATALOGUE.hardware, "models": _CATALOGUE.models}

# torchtitan's prefix and step line (log-formats.md §1.1), anchored: nothing else on the line.
LINE_RE = re.compile(
    r"^\[titan\] \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - root - INFO - "
    r"(?P<payload>step: (?P<step>[ \d]\d|\d{3,})  loss: (?P<loss>[ \d]\d\.\d{4}|\d{3,}\.\d{4})  "
    r"grad_norm: (?P<grad_norm>[ \d]\d\.\d{4}|\d{3,}\.\d{4})  "
    r"memory: (?P<mem>[ \d]\d\.\d{2}|\d{3,}\.\d{2})GiB"
    r"\((?P<pct>\d+\.\d{2})%\)  tps: (?P<tps>\d{1,3}(?:,\d{3})*)  "
    r"tflops: (?P<tflops>\d{1,3}(?:,\d{3})*\.\d{2})  mfu: (?P<mfu>\d+\.\d{2})%)$"
)


def _manifest(run_dir):
    return yaml.safe_load((run_dir / "run.yaml").read_text())


def test_two_rank_run_writes_a_valid_run_folder(gloo_run):
    manifest = load_manifest(gloo_run.run_dir, **SHIPPED)
    assert manifest.run_id == "gloo_fsdp2"
    assert [(e.relpath, e.kind) for e in manifest.logs] == [
        ("logs/steps_rank0.log", "torchtitan"),
        ("traces/trace_rank0.json.gz", "kineto_trace"),
        ("traces/trace_rank1.json.gz", "kineto_trace"),
    ]
    cfg = manifest.configuration
    assert (cfg["num_gpus"], cfg["gpus_per_node"], cfg["gpu"], cfg["precision"]) == (
        2,
        2,
        "cpu",
        "fp32",
    )
    assert (cfg["global_batch"], cfg["micro_batch"], cfg["seq_len"], cfg["sharding"]) == (
        16,
        8,
        256,
        "fsdp",
    )
    assert manifest.warmup_steps == 5 and manifest.harness_timing["steps"] == 15
    assert manifest.harness_timing["tokens"] == 15 * 16 * 256
    assert manifest.harness_timing["peak_tflops_per_device"] is None
    # a CPU run of the harness checks the pipeline end to end (figure sim_vs_measured says so)
    assert _manifest(gloo_run.run_dir)["purpose"] == "harness_test"


def test_step_lines_are_torchtitan_lines_exactly(gloo_run):
    lines = (gloo_run.run_dir / "logs" / "steps_rank0.log").read_text().splitlines()
    steps = [line for line in lines if " - step: " in line]
    assert len(steps) == 20
    for number, line in enumerate(steps, start=1):
        match = LINE_RE.match(line)
        assert match, line
        assert int(match["step"]) == number
        # Re-formatting the parsed numbers with torchtitan's format string gives the same text.
        assert (
            format_step(
                step=number,
                loss=float(match["loss"]),
                grad_norm=float(match["grad_norm"]),
                memory_gib=float(match["mem"]),
                memory_pct=float(match["pct"]),
                tps=int(match["tps"].replace(",", "")),
                tflops=float(match["tflops"].replace(",", "")),
                mfu_pct=float(match["mfu"]),
            )
            == match["payload"]
        )
    # Every other line is an INFO line with the same prefix (settings, timing, manifest).
    assert all(line.startswith("[titan] ") and " - root - INFO - " in line for line in lines)


def test_loss_decreases_on_the_fixed_batch(gloo_run):
    log = parse_step_log(gloo_run.run_dir / "logs" / "steps_rank0.log")
    losses = log.steps["loss"].tolist()
    assert losses[0] > 5.0  # about ln(256) = 5.55 at random initialisation
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    assert losses[-1] < losses[0] - 1.0


def test_ingested_tokens_per_s_agree_with_the_harness_timing(gloo_run):
    timing = _manifest(gloo_run.run_dir)["harness_timing"]
    results, steps = ingest_run(gloo_run.run_dir, **SHIPPED)
    row = results.iloc[0]
    assert row["n_steps"] == timing["steps"] == 15
    # 1. The row (median of the logged per-GPU tps × 2 GPUs) vs the harness's median step.
    assert row["tokens_per_s"] == pytest.approx(timing["tokens_per_s_median"], rel=0.01)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(row["tokens_per_s"] / 2)
    # 2. The log's timestamps alone: tokens of the steady steps over the time from the last
    #    warm-up line to the last line, vs the harness's window (its own clock).
    steady = steps[~steps["warmup"]]
    window_s = steady["timestamp"].iloc[-1] - steps[steps["warmup"]]["timestamp"].iloc[-1]
    log_rate = len(steady) * 16 * 256 / window_s.total_seconds()
    assert log_rate == pytest.approx(timing["tokens_per_s"], rel=0.01)
    # 3. Step time from the line timestamps (ms resolution) vs perf_counter's median.
    assert row["step_time_s"] == pytest.approx(timing["step_time_s_median"], abs=0.004)
    assert row["line_range"] == f"{steady['line'].iloc[0]}-{steady['line'].iloc[-1]}"
    assert pd.isna(row["mfu"])  # no peak FLOP/s for a CPU
    assert steps["mfu"].isna().all()  # the log's "mfu: 0.00%" means unknown, not zero


def test_traces_hold_the_profiled_steps(gloo_run):
    manifest = load_manifest(gloo_run.run_dir, **SHIPPED)
    traces = load_traces([e.path for e in manifest.logs if e.kind == "kineto_trace"])
    assert [t.rank for t in traces] == [0, 1] and {t.world_size for t in traces} == {2}
    # 3 recorded steps; the last is dropped as HTA does.
    assert [len(t.steps) for t in traces] == [2, 2]
    assert not any(t.events["is_gpu"].any() for t in traces)  # CPU run: no GPU kernels
    row = ingest_run(gloo_run.run_dir, **SHIPPED)[0].iloc[0]
    assert pd.isna(row["exposed_comm_s"])  # HTA's metrics need GPU kernels
    assert "traces/trace_rank1.json.gz" in row["log_file"]


def test_a_truncated_harness_log_is_an_error_naming_file_and_line(gloo_run, tmp_path):
    run = tmp_path / "gloo_fsdp2"
    shutil.copytree(gloo_run.run_dir, run)
    log = run / "logs" / "steps_rank0.log"
    text = log.read_text()
    cut = text.index(" - step: 20 ") + 40  # in the middle of the last step line
    log.write_text(text[:cut])
    line = text[:cut].count("\n") + 1
    with (
        pytest.warns(RuntimeWarning, match=rf"{re.escape(str(log))}:{line}: 1 garbled"),
        pytest.raises(
            InputFileError,
            match=rf"^{re.escape(str(log))}:{line}: truncated: "
            r"the harness ran 20 steps .* the last for step 19",
        ),
    ):
        ingest_run(run, **SHIPPED)


def test_single_process_without_torchrun(single_run):
    manifest = load_manifest(single_run.run_dir, **SHIPPED)
    assert manifest.configuration["num_gpus"] == 1
    assert "wrote" in single_run.process.stdout
    results, _ = ingest_run(single_run.run_dir, **SHIPPED)
    assert results.iloc[0]["n_steps"] == 6


def test_tensor_parallel_trains_like_one_process(single_run, tp_run):
    """TP 2 (column/row-parallel blocks) on the same data and weights as a single process."""
    single = parse_step_log(single_run.run_dir / "logs" / "steps_rank0.log").steps
    tp = parse_step_log(tp_run.run_dir / "logs" / "steps_rank0.log").steps
    assert load_manifest(tp_run.run_dir, **SHIPPED).configuration["tp"] == 2
    assert tp["loss"].tolist() == pytest.approx(single["loss"].tolist(), abs=2e-4)
    assert statistics.mean(tp["loss"].diff().dropna()) < 0


def test_refuses_a_non_empty_output_folder(torch_module, tmp_path, capsys):
    from trainscale.cli import main

    (tmp_path / "old.txt").write_text("x")
    assert main(["bench", *TINY, "--out", str(tmp_path)]) == 2
    assert "is not an empty folder" in capsys.readouterr().err


def test_cuda_without_a_gpu_is_a_clear_error(torch_module, tmp_path, capsys):
    from trainscale.cli import main

    if torch_module.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert main(["bench", *TINY, "--device", "cuda", "--out", str(tmp_path / "run")]) == 2
    assert "--device cuda, but PyTorch sees no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
