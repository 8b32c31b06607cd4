"""Plausibility checks on measured rows (reliability-3 S9-S13, BOM, ISO timestamps)."""

from __future__ import annotations

import re

import pytest
import yaml

from trainscale.errors import TrainscaleError
from trainscale.ingest.power_smi import parse_nvidia_smi_csv
from trainscale.ingest.runs import ingest_run

from .test_runs import SHIPPED, _synthetic_run


def _edit_power(run, change):
    path = run / "logs" / "power.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(change(lines)) + "\n")


def _edit_config(run, **values):
    manifest = yaml.safe_load((run / "run.yaml").read_text())
    manifest["configuration"].update(values)
    (run / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))


def _gpu1(lines, value):
    return [lines[0]] + [re.sub(r", 1, [\d.]+ W", f", 1, {value} W", line) for line in lines[1:]]


@pytest.mark.parametrize("watts", ["0.00", "20.00", "0.60"])
def test_power_below_idle_is_an_error(tmp_path, watts):  # S9 (0 W, below idle, kW in [W])
    run = _synthetic_run(tmp_path)
    _edit_power(run, lambda lines: _gpu1(lines, watts))
    with pytest.raises(TrainscaleError, match="below the idle draw"):
        ingest_run(run, **SHIPPED)


def test_kw_header_is_converted(tmp_path):
    run = _synthetic_run(tmp_path)
    _edit_power(
        run,
        lambda lines: (
            [lines[0].replace("[W]", "[kW]")]
            + [
                re.sub(r"(\d+\.\d+) W", lambda m: f"{float(m[1]) / 1000:.5f} kW", x)
                for x in lines[1:]
            ]
        ),
    )
    assert ingest_run(run, **SHIPPED)[0]["power_w_per_gpu"].iloc[0] == pytest.approx(254.5)


def test_gpu_never_logged_warns_and_strict_fails(tmp_path):  # S10, user-trial 22 (8 of 64)
    run = _synthetic_run(tmp_path)
    _edit_power(run, lambda lines: [x for x in lines if ", 1, " not in x])
    with pytest.warns(RuntimeWarning, match="power logged for 1 of the job's 2 GPUs"):
        results, _ = ingest_run(run, **SHIPPED)
    assert "power logged for 1 of the job's 2 GPUs" in results["warnings"].iloc[0]
    with pytest.raises(TrainscaleError, match="1 of the job's 2 GPUs"):
        ingest_run(run, **SHIPPED, strict=True)


def test_gpu_index_beyond_the_job_is_an_error(tmp_path):  # S10
    run = _synthetic_run(tmp_path)
    _edit_power(run, lambda lines: [lines[0]] + [x.replace(", 1, ", ", 5, ") for x in lines[1:]])
    with pytest.raises(TrainscaleError, match="power logged for GPU 5, but the job has 2"):
        ingest_run(run, **SHIPPED)


def test_conflicting_duplicate_samples_are_an_error(tmp_path):  # S11
    run = _synthetic_run(tmp_path)
    _edit_power(
        run, lambda lines: [*lines[:2], lines[1].replace("201.00 W", "250.00 W"), *lines[2:]]
    )
    with pytest.raises(TrainscaleError, match="conflicting duplicate samples"):
        ingest_run(run, **SHIPPED)


def test_memory_above_hbm_is_an_error(tmp_path):  # S12
    run = _synthetic_run(tmp_path)
    log = run / "logs" / "steps.log"
    log.write_text(log.read_text().replace("memory: 40.00GiB", "memory: 4000.00GiB"))
    with pytest.raises(TrainscaleError, match="more than a h100-sxm-80gb holds"):
        ingest_run(run, **SHIPPED)


def test_log_throughput_contradicting_the_manifest_is_an_error(tmp_path):  # S13
    run = _synthetic_run(tmp_path)
    _edit_config(run, layers=32, num_gpus=2, global_batch=2)
    log = run / "logs" / "steps.log"
    log.write_text(re.sub(r"tps: [\d,]+", "tps: 900,000", log.read_text()))
    with pytest.raises(TrainscaleError, match="do not match the log"):
        ingest_run(run, **SHIPPED)


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(
        b"\xef\xbb\xbftimestamp, index, power.draw [W]\n2025/01/01 12:00:00.000, 0, 300 W\n"
    )
    assert parse_nvidia_smi_csv(path).samples["power_w"].tolist() == [300.0]


def test_iso_timestamps_are_parsed_and_zones_named(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("timestamp, index, power.draw [W]\n2025-01-01T12:00:00.500, 0, 300 W\n")
    stamp = parse_nvidia_smi_csv(path).samples["timestamp"].iloc[0]
    assert str(stamp) == "2025-01-01 12:00:00.500000"
    path.write_text("timestamp, index, power.draw [W]\n2025-01-01T12:00:00+02:00, 0, 300 W\n")
    with pytest.raises(TrainscaleError, match="time zone"):
        parse_nvidia_smi_csv(path)
