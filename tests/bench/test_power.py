"""NVML power sampling (trainscale.bench.power) without a GPU: the CSV it writes is read by the
nvidia-smi parser and aligned to steps; a missing NVML is a warning, not a crash.

Reference: ../shared/reference/log-formats.md §2.1 (nvidia-smi ``--format=csv,nounits``: units
in the header, ``YYYY/MM/DD HH:MM:SS.mmm`` local time, ``[N/A]`` for missing values).
"""

from __future__ import annotations

import sys
import time
import types

import numpy as np
import pandas as pd
import pytest

from trainscale.bench.power import CSV_HEADER, GpuSample, PowerSampler, open_nvml
from trainscale.ingest.power import align_power_to_steps
from trainscale.ingest.power_smi import parse_nvidia_smi_csv


class FakeReader:
    """Two GPUs (NVML indices 3 and 5) drawing 100 + poll and 200 + poll W."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.polls = 0
        self.closed = False
        self.fail_at = fail_at

    def read(self) -> list[GpuSample]:
        if self.polls == self.fail_at:
            raise OSError("GPU fell off the bus")
        self.polls += 1
        return [
            GpuSample(3, 100.0 + self.polls, 90.0, 1000.0),
            GpuSample(5, 200.0 + self.polls, float("nan"), 2000.0),
        ]

    def close(self) -> None:
        self.closed = True


def test_sampler_writes_nvidia_smi_csv_that_parses_and_aligns(tmp_path):
    path = tmp_path / "power.csv"
    reader = FakeReader()
    sampler = PowerSampler(reader, path, interval_s=0.02)
    sampler.start()
    start = pd.Timestamp.now()
    time.sleep(0.25)
    end = pd.Timestamp.now()
    polls = sampler.stop()
    assert reader.closed and polls == reader.polls >= 5
    lines = path.read_text().splitlines()
    assert lines[0] == CSV_HEADER and len(lines) == 1 + 2 * polls
    assert ", [N/A], " in lines[2]  # a NaN reading is written the way nvidia-smi writes it
    log = parse_nvidia_smi_csv(path)
    assert log.skipped_lines == 0 and len(log.samples) == 2 * polls
    assert sorted(log.samples["gpu_index"].unique()) == [3, 5]
    gpu3 = log.samples[log.samples["gpu_index"] == 3]
    assert gpu3["power_w"].tolist() == [100.0 + k for k in range(1, polls + 1)]
    assert log.samples["util_gpu_pct"].isna().sum() == polls
    # One "step" covering the whole sampling: mean over GPUs of each GPU's mean power.
    steps = pd.DataFrame(
        {"step": [1, 2], "timestamp": [start - pd.Timedelta("1s"), end + pd.Timedelta("1s")]}
    )
    aligned = align_power_to_steps(log.samples, steps)
    expected = np.mean([100 + (polls + 1) / 2, 200 + (polls + 1) / 2])
    assert aligned["power_w_mean"].iloc[1] == pytest.approx(expected)


def test_sampler_reports_a_failed_reader(tmp_path):
    sampler = PowerSampler(FakeReader(fail_at=2), tmp_path / "p.csv", interval_s=0.01)
    sampler.start()
    time.sleep(0.1)
    with pytest.raises(RuntimeError, match="power sampling failed: GPU fell off the bus"):
        sampler.stop()


def test_interval_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="interval_s"):
        PowerSampler(FakeReader(), tmp_path / "p.csv", interval_s=0)


def _fake_pynvml(init_error: Exception | None = None, count: int = 2):
    module = types.ModuleType("pynvml")
    module.shut = 0

    def init():
        if init_error is not None:
            raise init_error

    def shutdown():
        module.shut += 1

    module.nvmlInit = init
    module.nvmlShutdown = shutdown
    module.nvmlDeviceGetCount = lambda: count
    module.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
    module.nvmlDeviceGetHandleByUUID = lambda uuid: {"GPU-aaa": "h0"}[uuid]
    module.nvmlDeviceGetIndex = lambda handle: int(handle[1:])
    module.nvmlDeviceGetPowerUsage = lambda handle: 412_370  # mW
    module.nvmlDeviceGetUtilizationRates = lambda handle: types.SimpleNamespace(gpu=97)
    module.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(used=3 * 2**20)
    return module


def test_no_nvml_library_is_a_warning(monkeypatch):
    monkeypatch.setitem(
        sys.modules, "pynvml", _fake_pynvml(init_error=OSError("NVML Shared Library Not Found"))
    )
    with pytest.warns(RuntimeWarning, match=r"no power log: NVML is not available \(NVML Shared"):
        assert open_nvml() is None


def test_no_nvidia_ml_py_is_a_warning(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    with pytest.warns(RuntimeWarning, match=r"nvidia-ml-py \(pynvml\) is not installed"):
        assert open_nvml() is None


def test_unknown_gpu_uuid_is_a_warning_and_nvml_is_shut_down(monkeypatch):
    fake = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with pytest.warns(RuntimeWarning, match="cannot open the GPUs in NVML"):
        assert open_nvml(["bbb"]) is None
    assert fake.shut == 1


def test_nvml_reader_reads_watts_percent_and_mib(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    reader = open_nvml(["aaa"])  # torch prints UUIDs without the "GPU-" prefix
    assert reader is not None and reader.indices == [0]
    assert reader.read() == [GpuSample(0, 412.37, 97.0, 3.0)]
    all_gpus = open_nvml()
    assert all_gpus is not None and all_gpus.indices == [0, 1]
