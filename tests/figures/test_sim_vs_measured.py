"""Figure sim_vs_measured (issue 25 item 3, user trial 3 items 8 and 14): what each real run can
show, the prediction's interval as a whisker, and measured against predicted power."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection

from trainscale.figures import sim_vs_measured
from trainscale.ingest.accuracy import predict_measured
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue

HARDWARE = load_catalogue().hardware


def _manifest(purpose: str, logs: dict[str, str]) -> SimpleNamespace:
    """The two things predict_measured reads of a RunManifest: ``raw`` and ``logs``."""
    entries = tuple(SimpleNamespace(relpath=path, kind=kind) for path, kind in logs.items())
    return SimpleNamespace(raw={"purpose": purpose}, logs=entries)


@pytest.fixture(scope="module")
def table(measured_dataset) -> pd.DataFrame:
    """The H100 run as a functional test with a power log, the CPU run as a harness test."""
    measured = measured_dataset[measured_dataset["source"] == "measured"].reset_index(drop=True)
    measured = measured.assign(
        power_w_per_gpu=[512.0, np.nan], log_file=["steps.log;power.csv", "steps.log"]
    )
    manifests = {
        "gpu_run": _manifest(
            "functional_test", {"steps.log": "megatron", "power.csv": "nvidia_smi"}
        ),
        "cpu_run": _manifest("harness_test", {"steps.log": "torchtitan"}),
    }
    return predict_measured(
        measured, load_calibration(), catalogue=load_catalogue(), manifests=manifests
    )


def test_the_table_carries_purpose_interval_and_power(table):
    gpu = table.set_index("run_id").loc["gpu_run"]
    assert gpu["purpose"] == "functional_test"
    for metric in ("step_time_s", "tokens_per_s_per_gpu"):
        lo, mid, hi = (gpu[f"predicted_{metric}{end}"] for end in ("_lo", "", "_hi"))
        assert lo < mid < hi
    assert gpu["measured_power_w_per_gpu"] == 512.0
    assert 0 < gpu["predicted_power_w_per_gpu"] <= 700.0  # an H100 SXM's TDP
    assert gpu["power_log"] == "power.csv"  # the power log, not the step log
    cpu = table.set_index("run_id").loc["cpu_run"]
    assert cpu["purpose"] == "harness_test" and cpu["power_log"] == ""
    assert np.isnan(cpu["predicted_power_w_per_gpu"])


def test_a_functional_test_is_labelled_so(table):
    fig = sim_vs_measured.plot(table, hardware=HARDWARE)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    gpu_tick = next(t for t in ticks if t.startswith("gpu_run"))
    assert "functional test, not a benchmark" in gpu_tick
    notes = " ".join(t.get_text() for t in fig.texts).replace("\n", " ").replace("  ", " ")
    assert "gpu_run: a functional-test (CI) configuration, not a performance run" in notes
    assert "cpu_run: a test-harness run" in notes
    plt.close(fig)


def test_the_prediction_has_its_interval_as_a_whisker(table):
    fig = sim_vs_measured.plot(table, hardware=HARDWARE)
    axes = {a.get_xlabel(): a for a in fig.axes}
    gpu = table.set_index("run_id").loc["gpu_run"]
    for label, metric in (("Step time (s)", "step_time_s"),
                          ("Throughput per GPU (tokens/s)", "tokens_per_s_per_gpu")):  # fmt: skip
        segments = [
            seg for c in axes[label].collections if isinstance(c, LineCollection)
            for seg in c.get_segments()
        ]  # fmt: skip
        spans = [sorted(s[:, 0]) for s in segments if len(s) == 2 and s[0, 1] == s[1, 1]]
        expected = [gpu[f"predicted_{metric}_lo"], gpu[f"predicted_{metric}_hi"]]
        assert any(np.allclose(span, expected) for span in spans), (label, spans)
    plt.close(fig)


def test_power_is_compared_where_a_run_has_a_power_log_and_its_source_named(table):
    fig = sim_vs_measured.plot(table, hardware=HARDWARE)
    power = next(a for a in fig.axes if a.get_xlabel() == "Power per GPU (W)")
    xs = np.concatenate([c.get_offsets()[:, 0] for c in power.collections if len(c.get_offsets())])
    gpu = table.set_index("run_id").loc["gpu_run"]
    assert 512.0 in xs and gpu["predicted_power_w_per_gpu"] in xs
    assert power.get_xlim()[0] == 0.0  # from zero: a 10 W difference reads at its size
    notes = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "Measured power: gpu_run" in notes and "from power.csv" in notes
    plt.close(fig)


def test_without_a_power_log_the_power_panel_says_so(table):
    fig = sim_vs_measured.plot(
        table.assign(measured_power_w_per_gpu=np.nan, power_log=""), hardware=HARDWARE
    )
    power = next(a for a in fig.axes if a.get_xlabel() == "Power per GPU (W)")
    assert any("no run has measured power" in t.get_text() for t in power.texts)
    notes = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "Measured power: no run has a power log" in notes
    plt.close(fig)
