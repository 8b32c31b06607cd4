"""Each plausibility rule of :mod:`trainscale.ingest.plausibility` and
:mod:`trainscale.ingest.distinct_logs`, over generated runs (hypothesis), not only the reported
example: logged MFU and TFLOP/s within the GPU's peak, power between idle and the TDP limit,
the manifest against the log within the log's own agreement, distinct power logs."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest.test_damage import CATALOGUE, SHIPPED
from tests.ingest.test_run_properties import _generated_run, _run_spec
from trainscale.errors import InputFileError
from trainscale.ingest.plausibility import MIN_AGREEMENT, PEAK_TOLERANCE, TDP_TOLERANCE, agreement
from trainscale.ingest.runs import ingest_run

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

_SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _titan_spec() -> st.SearchStrategy[dict]:
    return _run_spec().map(lambda spec: {**spec, "format": "torchtitan"})


def _edit(path: Path, edit) -> None:
    path.write_text(edit(path.read_text()))


def _manifest(run: Path, edit) -> None:
    data = yaml.safe_load((run / "run.yaml").read_text())
    edit(data)
    (run / "run.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def _damage_step(run: Path, step: int, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in line ``step`` of the run's step log."""
    log = run / "logs" / "steps.log"
    lines = log.read_text().splitlines()
    lines[step - 1] = lines[step - 1].replace(old, new)
    log.write_text("\n".join(lines) + "\n")


@_SETTINGS
@given(spec=_titan_spec(), data=st.data())
def test_logged_mfu_above_100_percent_is_an_error(spec: dict, data: st.DataObject) -> None:
    value = data.draw(st.floats(100.01, 1e5))  # a negative one is not a step line
    step = data.draw(st.integers(1, spec["steps"]))
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        _damage_step(run, step, "mfu: 10.00%", f"mfu: {value:.2f}%")
        with pytest.raises(InputFileError, match=rf"steps\.log:{step}: logged MFU .* impossible"):
            ingest_run(run, **SHIPPED)


@_SETTINGS
@given(spec=_titan_spec(), data=st.data())
def test_logged_tflops_above_the_gpus_peak_is_an_error(spec: dict, data: st.DataObject) -> None:
    peak = CATALOGUE.hardware.gpus[spec["gpu"]].bf16_flops_per_s / 1e12
    value = data.draw(st.floats(peak * (1 + 2 * PEAK_TOLERANCE), peak * 1000))
    step = data.draw(st.integers(1, spec["steps"]))
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        _damage_step(run, step, "tflops: 100.00", f"tflops: {value:.2f}")
        with pytest.raises(InputFileError, match=rf"steps\.log:{step}: logged TFLOP/s"):
            ingest_run(run, **SHIPPED)


@_SETTINGS
@given(spec=_run_spec(), data=st.data())
def test_power_between_idle_and_the_limit(spec: dict, data: st.DataObject) -> None:
    gpu = CATALOGUE.hardware.gpus[spec["gpu"]]
    below = data.draw(st.booleans())
    watts = (
        data.draw(st.floats(0.5, gpu.idle_w * 0.99))
        if below
        else data.draw(st.floats(gpu.idle_w * 1.01, gpu.tdp_w * (1 + TDP_TOLERANCE) * 0.99))
    )
    index = data.draw(st.integers(0, spec["num_gpus"] - 1))
    spec = {**spec, "watts": [*spec["watts"][:index], watts, *spec["watts"][index + 1 :]]}
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        if below:
            with pytest.raises(InputFileError, match=f"GPU {index} draws .* below the idle draw"):
                ingest_run(run, **SHIPPED)
        else:
            ingest_run(run, **SHIPPED)


@_SETTINGS
@given(
    spec=_titan_spec(),
    factor=st.one_of(st.floats(1.2, 8.0), st.floats(1 / 8, 1 / 1.2)),
    key=st.sampled_from(["seq_len", "global_batch"]),
)
def test_a_manifest_off_by_a_factor_is_an_error(spec: dict, factor: float, key: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        unit = spec["num_gpus"] if key == "global_batch" else 1  # a multiple of dp
        changed = unit * max(1, round(spec[key] * factor / unit))
        if abs(changed / spec[key] - 1) < 0.15:
            return  # rounding left it within the log's agreement
        _manifest(run, lambda d: d["configuration"].update({key: changed}))
        with pytest.raises(InputFileError, match=r"do not match the log|above 100 %"):
            ingest_run(run, **SHIPPED)


@settings(max_examples=200, deadline=None)
@given(
    base=st.floats(1e-3, 1e6),
    noise=st.lists(st.floats(-0.3, 0.3), min_size=2, max_size=40),
)
def test_agreement_is_the_logs_own_spread_and_at_least_the_floor(
    base: float, noise: list[float]
) -> None:
    ratios = base * np.exp(np.array(noise))
    factor = agreement(ratios)
    low, high = np.percentile(ratios, [10, 90])
    assert factor >= MIN_AGREEMENT
    assert factor == pytest.approx(max(MIN_AGREEMENT, high / low))


@_SETTINGS
@given(spec=_run_spec(), how=st.sampled_from(["twice", "symlink", "hardlink", "copy"]))
def test_a_power_log_counted_twice_is_an_error(spec: dict, how: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        power = run / "logs" / "power.csv"
        other = run / "logs" / "power2.csv"
        path = "logs/power.csv"
        if how == "symlink":
            other.symlink_to("power.csv")
        elif how == "hardlink":
            os.link(power, other)
        elif how == "copy":
            shutil.copy(power, other)
        if how != "twice":
            path = "logs/power2.csv"
        _manifest(run, lambda d: d["logs"].append({"path": path, "kind": "nvidia_smi"}))
        with pytest.raises(InputFileError, match=r"listed once|the same samples"):
            ingest_run(run, **SHIPPED)


@_SETTINGS
@given(spec=_run_spec(), shift=st.floats(5.0, 50.0))
def test_two_logs_of_one_gpu_at_one_time_on_one_node_are_an_error(spec: dict, shift: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        power = run / "logs" / "power.csv"
        other = run / "logs" / "power2.csv"
        other.write_text(
            re.sub(
                r"(\d+\.\d+) W",
                lambda m: f"{float(m[1]) + shift:.2f} W",
                power.read_text(),
            )
        )
        _manifest(
            run, lambda d: d["logs"].append({"path": "logs/power2.csv", "kind": "nvidia_smi"})
        )
        with pytest.raises(InputFileError, match=r"job runs on one node|above what"):
            ingest_run(run, **SHIPPED)
