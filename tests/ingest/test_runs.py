"""Tests of trainscale.ingest.runs: the run manifest (validation, errors) and ingest_run.

References for the expected numbers:
- Megatron golden values: the step times are read from the JSON file itself in the test, and
  the model FLOPs are recomputed by hand from the shape (PaLM appendix B: 6·N_matmul + 12·L·h·s);
- HTA sample traces: ../shared/reference/log-formats.md §5.1 (HolisticTraceAnalysis 0.5.0
  reference values per rank);
- synthetic torchtitan + nvidia-smi logs written here with known values.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from trainscale.errors import InputFileError
from trainscale.ingest.manifest import load_manifest, run_input_files, schema_path
from trainscale.ingest.runs import ingest_run, write_ingested
from trainscale.schema import CONFIGURATION_COLUMNS, DATASET_COLUMNS, STEP_TABLE_COLUMNS, names
from trainscale.sim.catalogue import load_catalogue

REPO = Path(__file__).resolve().parents[2]
#: The catalogues a run is checked and ingested with: the shipped ones.
CATALOGUE = load_catalogue()
SHIPPED = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}
RUNS = REPO / "data" / "runs"
GOLDEN = "megatron_golden_values_gpt3_345m_1N8G_mcore_tp1_pp2_dev_dgx_h100.json"


def _shipped(name: str) -> Path:
    run = RUNS / name
    if not (run / "run.yaml").is_file():
        pytest.skip(f"shipped run {name} not present")
    return run


# --- the schema -------------------------------------------------------------------------------


def _walk(node: object, where: str = ""):
    if isinstance(node, dict):
        if "properties" in node:
            for key, sub in node["properties"].items():
                yield f"{where}.{key}", sub
                yield from _walk(sub, f"{where}.{key}")
        for key in ("additionalProperties", "items", "$defs"):
            if isinstance(node.get(key), dict):
                yield from _walk(node[key], f"{where}/{key}")
        if "$defs" in node:
            for key, sub in node["$defs"].items():
                yield from _walk(sub, f"{where}$defs.{key}")


def test_schema_describes_every_key_and_forbids_unknown_ones():
    schema = yaml.safe_load(schema_path().read_text())
    assert schema["additionalProperties"] is False
    assert len(list(_walk(schema))) > 60  # the walk reaches the nested keys
    missing = [where for where, sub in _walk(schema) if "description" not in sub]
    assert missing == []
    open_objects = [
        where
        for where, sub in _walk(schema)
        if sub.get("type") == "object"
        and "properties" in sub
        and sub.get("additionalProperties") is not False
    ]
    assert open_objects == []


def test_schema_configuration_has_exactly_the_configuration_columns():
    schema = yaml.safe_load(schema_path().read_text())
    keys = list(schema["$defs"]["configuration"]["properties"])
    assert keys == [c.name for c in CONFIGURATION_COLUMNS]
    assert "required" not in schema["$defs"]["configuration"]  # third-party runs state little


@pytest.mark.parametrize("name", ["megatron_golden_345m", "hta_samples", "cpu_gloo_2rank_tiny"])
def test_shipped_manifests_are_valid(name):
    manifest = load_manifest(_shipped(name), **SHIPPED)
    assert manifest.run_id == name
    assert all(entry.path.is_file() for entry in manifest.logs)


# --- manifest errors --------------------------------------------------------------------------


def _write_run(tmp_path: Path, text: str, name: str = "myrun") -> Path:
    run = tmp_path / name
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "steps.log").write_text("x\n")
    (run / "run.yaml").write_text(text)
    return run


VALID = """\
run_id: myrun
description: A test run.
configuration:
  num_gpus: 8
logs:
  - path: logs/steps.log
    kind: torchtitan
"""


def _error(tmp_path: Path, text: str, name: str = "myrun") -> str:
    run = _write_run(tmp_path, text, name)
    with pytest.raises(InputFileError) as info:
        load_manifest(run, **SHIPPED)
    return str(info.value)


def test_valid_manifest_loads(tmp_path):
    manifest = load_manifest(_write_run(tmp_path, VALID), **SHIPPED)
    assert manifest.configuration == {"num_gpus": 8}
    assert manifest.warmup_steps == 1  # the schema's default
    assert [e.job for e in manifest.logs] == ["myrun"]


def test_unknown_configuration_key_names_file_line_key_and_allowed(tmp_path):
    message = _error(tmp_path, VALID.replace("  num_gpus: 8", "  num_gpus: 8\n  gpus: 8"))
    assert message.startswith(
        f"{tmp_path / 'myrun' / 'run.yaml'}:5: key 'configuration.gpus': unknown key; allowed: "
    )
    assert "num_gpus" in message


def test_bad_kind_names_its_line_and_the_allowed_kinds(tmp_path):
    message = _error(tmp_path, VALID.replace("kind: torchtitan", "kind: titan"))
    assert (
        ":7: key 'logs[0].kind': 'titan' is not allowed; allowed: torchtitan, megatron" in message
    )


def test_value_out_of_range(tmp_path):
    message = _error(tmp_path, VALID.replace("num_gpus: 8", "num_gpus: 0"))
    assert ":4: key 'configuration.num_gpus': 0 is less than the minimum of 1 (GPUs" in message


def test_every_problem_is_listed(tmp_path):
    text = VALID.replace("num_gpus: 8", "num_gpus: -1\n  tp: 0").replace("torchtitan", "x")
    message = _error(tmp_path, text)
    assert "3 problems:" in message
    for part in (
        "line 4, key 'configuration.num_gpus'",
        "line 5, key 'configuration.tp'",
        "line 8, key 'logs[0].kind'",
    ):
        assert part in message


def test_missing_log_file(tmp_path):
    message = _error(tmp_path, VALID.replace("logs/steps.log", "logs/other.log"))
    assert ":6: key 'logs[0].path': no such file 'logs/other.log'" in message


@pytest.mark.parametrize("path", ["/etc/passwd", "../other/steps.log", "logs/../../x"])
def test_paths_must_stay_in_the_run_folder(tmp_path, path):
    message = _error(tmp_path, VALID.replace("logs/steps.log", path))
    assert f"key 'logs[0].path': {path!r} must be a path relative to the run folder" in message


def test_run_id_must_be_the_folder_name(tmp_path):
    message = _error(tmp_path, VALID, name="other")
    assert ":1: key 'run_id': 'myrun' must be the run folder's name 'other'" in message


def test_unknown_catalogue_keys(tmp_path):
    message = _error(tmp_path, VALID.replace("num_gpus: 8", "num_gpus: 8\n  gpu: h900"))
    assert "key 'configuration.gpu': 'h900' is neither 'cpu' nor a GPU" in message
    assert "h100-sxm-80gb" in message
    message = _error(tmp_path / "b", VALID.replace("num_gpus: 8", "model: llama9"))
    assert "key 'configuration.model': 'llama9' is not in the model catalogue" in message


def test_plan_factors_must_divide(tmp_path):
    text = VALID.replace("num_gpus: 8", "num_gpus: 8\n  tp: 3")
    assert "num_gpus 8 is not divisible by tp·pp·cp = 3·1·1" in _error(tmp_path, text)
    text = VALID.replace("num_gpus: 8", "num_gpus: 8\n  global_batch: 12\n  micro_batch: 1")
    message = _error(tmp_path / "b", text)
    assert "global_batch 12 is not a multiple of dp·micro_batch = 8·1" in message


def test_jobs_and_log_jobs_must_match(tmp_path):
    text = VALID + "    job: a\n"
    assert "key 'logs[0].job': names a job but the manifest has no 'jobs'" in _error(tmp_path, text)
    text = VALID + "jobs:\n  a: {description: A.}\n  b: {description: B.}\n"
    message = _error(tmp_path / "b", text)
    assert "key 'logs[0]': must name one of the jobs a, b" in message
    assert "key 'jobs.a': no log file names this job" in message


def test_parser_options_only_for_their_kind(tmp_path):
    text = VALID.replace("kind: torchtitan", "kind: torchtitan\n    start_time: '2025-01-01'")
    assert "key 'logs[0].start_time': only for kind(s) dcgmi, not torchtitan" in _error(
        tmp_path, text
    )


def test_invalid_yaml_names_the_line(tmp_path):
    message = _error(tmp_path, VALID + "  - [unclosed\n")
    assert "run.yaml:" in message and "invalid YAML" in message


def test_missing_manifest(tmp_path):
    with pytest.raises(InputFileError, match=r"run\.yaml: no run manifest"):
        load_manifest(tmp_path, **SHIPPED)


def test_run_input_files_is_lenient(tmp_path):
    run = _write_run(tmp_path, "run_id: [broken\n")
    assert run_input_files(run) == [str(run / "run.yaml")]
    good = _write_run(tmp_path / "ok", VALID)
    assert run_input_files(good) == [str(good / "run.yaml"), str(good / "logs" / "steps.log")]


# --- ingesting the shipped third-party runs ---------------------------------------------------


def test_megatron_golden_row():
    run = _shipped("megatron_golden_345m")
    results, steps = ingest_run(run, **SHIPPED)
    assert len(results) == 1 and list(results.columns) == [c.name for c in DATASET_COLUMNS]
    row = results.iloc[0]
    values = json.loads((run / GOLDEN).read_text())["iteration-time"]["values"]
    steady = [values[k] for k in sorted(values, key=int)][2:]  # warm-up: steps 1 and 5
    median = statistics.median(steady)
    assert row["n_steps"] == len(steady) == 9
    assert row["line_range"] == "steps 10-50"
    assert row["step_time_s"] == pytest.approx(median, rel=1e-12)
    assert row["tokens_per_s"] == pytest.approx(32 * 1024 / median, rel=1e-12)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(32 * 1024 / median / 8, rel=1e-12)
    # Model FLOPs per token by hand: 12 layers of Q,K,V,O (4·h²) and a GeLU MLP (2·h·4h), plus
    # the LM head (V·h); attention 12·L·h·s.
    h, layers, seq, vocab = 512, 12, 1024, 50304
    n_matmul = layers * (4 * h * h + 2 * h * 4 * h) + vocab * h
    flops = 6 * n_matmul + 12 * layers * h * seq
    peak = CATALOGUE.hardware.gpus["h100-sxm-80gb"].bf16_flops_per_s
    assert row["mfu"] == pytest.approx(flops * 32 * 1024 / median / (8 * peak), rel=1e-12)
    assert row["source"] == "measured" and row["study"] == "runs"
    assert row["dp"] == 4 and row["grad_accum"] == 2
    assert row["mem_gib_per_gpu"] == pytest.approx(3637371904 / 2**30)
    assert list(steps.columns) == names(STEP_TABLE_COLUMNS)
    assert steps["warmup"].tolist() == [True, True] + [False] * 9


def test_hta_samples_rows_match_hta_reference_values():
    results, steps = ingest_run(_shipped("hta_samples"), **SHIPPED)
    assert steps.empty
    by_id = {row["config_id"]: row for _, row in results.iterrows()}
    job = by_id["hta_samples:trace_filter_128rank"]
    # log-formats.md §5.1: one complete profiler step per rank, so the per-step medians are the
    # per-rank totals; the row is their mean over ranks 0 and 1 (µs → s).
    assert job["exposed_comm_s"] == pytest.approx((172_259 + 134_336) / 2 / 1e6, abs=1e-9)
    assert job["comm_s"] == pytest.approx((195_327 + 168_027) / 2 / 1e6, abs=1e-9)
    assert job["compute_s"] == pytest.approx((106_252 + 135_548) / 2 / 1e6, abs=1e-9)
    assert job["p2p_s"] == pytest.approx(job["comm_s"])  # only SendRecv kernels
    assert job["num_gpus"] == 128 and job["n_steps"] == 1
    assert pd.isna(job["tokens_per_s"])  # neither batch nor sequence length is stated
    ddp = by_id["hta_samples:ddp_resnet_a100"]
    assert ddp["n_steps"] == 2 and ddp["sharding"] == "ddp" and ddp["dp"] == 2
    assert 0 < ddp["exposed_comm_s"] < ddp["comm_s"]
    assert ddp["allreduce_s"] > 0 and ddp["allgather_s"] == 0
    assert ddp["exposed_comm_frac"] == pytest.approx(ddp["exposed_comm_s"] / ddp["step_time_s"])


# --- a synthetic torchtitan run with a power log ------------------------------------------------


def _titan_line(step: int, second: int, tps: int) -> str:
    return (
        f"[rank0]:[titan] 2025-01-01 12:00:{second:02d},000 - root - INFO - step: {step:2}  "
        f"loss: {8 - 0.1 * step:7.4f}  grad_norm:  1.0000  memory: 40.00GiB(50.00%)  "
        f"tps: {tps:,}  tflops: 100.00  mfu: 10.00%"
    )


def _synthetic_run(
    tmp_path: Path, *, steps: int = 6, truncate: bool = False, harness: bool = False
) -> Path:
    """8 steps one second apart; tps 1000·step; 2 GPUs drawing (200 + step) and (300 + step) W
    during step `step` (samples every 0.25 s)."""
    run = tmp_path / "synth"
    (run / "logs").mkdir(parents=True)
    lines = ["[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Starting job"]
    lines += [_titan_line(step, step, 1000 * step) for step in range(1, steps + 1)]
    if truncate:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    (run / "logs" / "steps.log").write_text("\n".join(lines) + ("" if truncate else "\n"))
    power = ["timestamp, index, power.draw [W], utilization.gpu [%]"]
    for step in range(1, steps + 1):
        for quarter in (0, 250, 500, 750):  # inside (step - 1, step]: offsets 250..1000 ms
            ms = quarter + 250
            second, ms = (step - 1 + ms // 1000), ms % 1000
            for gpu, base in ((0, 200), (1, 300)):
                power.append(
                    f"2025/01/01 12:00:{second:02d}.{ms:03d}, {gpu}, {base + step:.2f} W, 90 %"
                )
    (run / "logs" / "power.csv").write_text("\n".join(power) + "\n")
    manifest = {
        "run_id": "synth",
        "description": "Synthetic torchtitan run.",
        "configuration": {
            "model": "llama2-7b",
            "layers": 4,
            "seq_len": 4096,
            "global_batch": 2,
            "micro_batch": 1,
            "gpu": "h100-sxm-80gb",
            "num_gpus": 2,
            "tp": 1,
            "pp": 1,
            "sharding": "fsdp",
            "recompute": "none",
            "precision": "bf16",
        },
        "logs": [
            {"path": "logs/steps.log", "kind": "torchtitan"},
            {"path": "logs/power.csv", "kind": "nvidia_smi"},
        ],
        "steady_state": {"warmup_steps": 2},
    }
    if harness:
        manifest["harness_timing"] = {
            "tokens_per_s": 1.0,
            "step_time_s": 1.0,
            "steps": steps - 2,
            "tokens": 1,
        }
    (run / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return run


def test_synthetic_torchtitan_run_with_power(tmp_path):
    results, steps = ingest_run(_synthetic_run(tmp_path), **SHIPPED)
    row = results.iloc[0]
    # steady steps 3..6: tps 3000..6000 → median 4500 per GPU; 2 GPUs.
    assert row["tokens_per_s_per_gpu"] == 4500 and row["tokens_per_s"] == 9000
    assert row["step_time_s"] == 1.0 and row["step_time_s_iqr"] == 0.0
    assert row["n_steps"] == 4 and row["line_range"] == "4-7"
    # power during step s: mean of (200 + s) and (300 + s) = 250 + s; median over 3..6 = 254.5.
    assert row["power_w_per_gpu"] == pytest.approx(254.5)
    assert row["energy_j_per_token"] == pytest.approx(254.5 * 2 / 9000)
    assert steps["power_w_per_gpu"].tolist()[1:] == pytest.approx([252, 253, 254, 255, 256])
    assert np.isnan(steps["power_w_per_gpu"].iloc[0])  # no interval before the first line
    # MFU by the schema's definition (not the logged 10 %): Llama-2-7B shape cut to 4 layers.
    h, ffn, vocab, layers, seq = 4096, 11008, 32000, 4, 4096
    flops = 6 * (layers * (4 * h * h + 3 * h * ffn) + vocab * h) + 12 * layers * h * seq
    peak = CATALOGUE.hardware.gpus["h100-sxm-80gb"].bf16_flops_per_s
    assert row["mfu"] == pytest.approx(flops * 9000 / (2 * peak))
    assert row["mem_gib_per_gpu"] == 40.0
    assert row["log_file"] == "logs/steps.log;logs/power.csv"
    assert steps["global_batch"].tolist() == [2] * 6  # from the configuration


def test_truncated_line_is_reported_with_file_and_line(tmp_path):
    run = _synthetic_run(tmp_path, truncate=True)
    log = run / "logs" / "steps.log"
    with pytest.warns(RuntimeWarning, match=rf"{log}:7: 1 garbled or truncated step line"):
        results, _ = ingest_run(run, **SHIPPED)
    assert results.iloc[0]["n_steps"] == 3  # steps 3..5; the cut step 6 is not used
    with pytest.raises(InputFileError, match=rf"^{log}:7: 1 garbled or truncated"):
        ingest_run(run, strict=True, **SHIPPED)


def test_harness_log_shorter_than_its_manifest_is_an_error(tmp_path):
    run = _synthetic_run(tmp_path, steps=6, harness=True)
    lines = (run / "logs" / "steps.log").read_text().splitlines(keepends=True)
    (run / "logs" / "steps.log").write_text("".join(lines[:-1]))  # cut at a line boundary
    with pytest.raises(InputFileError, match=r"steps\.log:6: truncated: the harness ran 6 steps"):
        ingest_run(run, **SHIPPED)


def test_nothing_is_written_when_a_log_is_bad(tmp_path):
    run = _synthetic_run(tmp_path)
    (run / "logs" / "power.csv").write_text("garbage\n")
    out = tmp_path / "out"
    with pytest.raises(InputFileError, match=r"power\.csv"):
        write_ingested(run, out / "r.parquet", out / "r_steps.parquet", **SHIPPED)
    assert not out.exists() or list(out.iterdir()) == []


def test_write_ingested_writes_both_tables(tmp_path):
    run = _synthetic_run(tmp_path)
    out = tmp_path / "out"
    write_ingested(run, out / "synth.parquet", out / "synth_steps.parquet", **SHIPPED)
    results = pd.read_parquet(out / "synth.parquet")
    assert list(results.columns) == [c.name for c in DATASET_COLUMNS]
    assert results["tokens_per_s"].tolist() == [9000]
    steps = pd.read_parquet(out / "synth_steps.parquet")
    assert list(steps.columns) == names(STEP_TABLE_COLUMNS) and len(steps) == 6
    assert sorted(p.name for p in out.iterdir()) == ["synth.parquet", "synth_steps.parquet"]


def test_ingest_command_prints_and_writes(tmp_path, capsys):
    from trainscale.cli import main

    run = _synthetic_run(tmp_path)
    assert main(["ingest", str(run), "-o", str(tmp_path / "o.parquet")]) == 0
    out = capsys.readouterr().out
    assert "tokens/s: 9,000" in out and "lines: 4-7" in out
    assert (tmp_path / "o.parquet").is_file()
    shutil.rmtree(run / "logs")
    assert main(["ingest", str(run)]) == 2
    assert "no such file 'logs/steps.log'" in capsys.readouterr().err


def test_shipped_cpu_run_agrees_with_its_harness_timing():
    run = _shipped("cpu_gloo_2rank_tiny")
    timing = load_manifest(run, **SHIPPED).harness_timing
    results, steps = ingest_run(run, **SHIPPED)
    row = results.iloc[0]
    assert row["n_steps"] == timing["steps"] == 18
    assert row["tokens_per_s"] == pytest.approx(timing["tokens_per_s_median"], rel=0.01)
    assert row["gpu"] == "cpu" and pd.isna(row["mfu"]) and pd.isna(row["power_w_per_gpu"])
    assert steps["loss"].is_monotonic_decreasing and steps["loss"].iloc[-1] < 2
