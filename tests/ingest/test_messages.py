"""The messages the reliability trial found misleading: a Megatron log with batch ramp-up
ingests (the ramp steps excluded, said so), warnings print without the Python source line,
``nan``/``NA``/``None`` in a predict table are refused as docs/bad-input.md says."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest.test_damage import SHIPPED, make_run
from tests.ingest.test_run_properties import _generated_run, _run_spec
from trainscale.errors import InputFileError
from trainscale.ingest.runs import ingest_run


def _ramp(log: Path, batches: list[int]) -> None:
    lines = log.read_text().splitlines()
    for k, batch in enumerate(batches):
        lines[k] = re.sub(r"global batch size: +\d+", f"global batch size: {batch:5d}", lines[k])
    log.write_text("\n".join(lines) + "\n")


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(spec=_run_spec().map(lambda s: {**s, "format": "megatron", "steps": max(s["steps"], 8)}),
       data=st.data())  # fmt: skip
def test_a_megatron_batch_ramp_up_is_excluded_and_said(spec: dict, data: st.DataObject) -> None:
    final = spec["global_batch"]
    ramp = data.draw(st.integers(1, spec["steps"] - 3))
    start = data.draw(st.integers(1, max(1, final - 1)))
    batches = sorted(data.draw(st.lists(st.integers(start, max(start, final - 1)),
                                        min_size=ramp, max_size=ramp)))  # fmt: skip
    if final == 1:
        return  # no smaller batch to ramp from
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        _ramp(run / "logs" / "steps.log", batches)
        with pytest.warns(RuntimeWarning, match=f"the first {ramp} step\\(s\\) ramp the global"):
            results, steps = ingest_run(run, **SHIPPED)
        assert int(results["n_steps"].iloc[0]) == spec["steps"] - max(ramp, 1)
        assert steps["warmup"].iloc[: max(ramp, 1)].all()


@pytest.mark.parametrize("batches", [[999999], [4, 2], [2, 2, 1]])
def test_a_batch_that_is_not_a_ramp_is_still_an_error(batches: list[int]) -> None:
    spec = {"format": "megatron", "gpu": "h100-sxm-80gb", "num_gpus": 2, "steps": 8,
            "step_s": 1.0, "watts": [300.0, 300.0], "mem_gib": 10.0, "global_batch": 8,
            "seq_len": 512}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        run = _generated_run(Path(tmp), spec)
        _ramp(run / "logs" / "steps.log", [*batches, 1])  # falls, or above the manifest's
        with pytest.raises(InputFileError, match="global batch size"):
            ingest_run(run, **SHIPPED)


def test_ingest_warnings_carry_no_python_source_line(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    log = run / "logs" / "steps.log"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([*lines, lines[-1]]) + "\n")  # a duplicated step line: a warning
    with warnings.catch_warnings():
        result = subprocess.run(
            [sys.executable, "-m", "trainscale.cli", "ingest", str(run)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "trainscale ingest: warning: " in result.stderr
    assert ".py:" not in result.stderr and "RuntimeWarning" not in result.stderr


@pytest.mark.parametrize("text", ["nan", "NaN", "NA", "null", "None", "N/A"])
def test_nan_like_text_in_an_optional_column_is_refused(tmp_path: Path, text: str, cli) -> None:
    table = tmp_path / "in.csv"
    table.write_text(
        "model,gpu,num_gpus,seq_len,global_batch,micro_batch,tp,pp,sharding,recompute,precision,cp\n"
        f"llama2-7b,h100-sxm-80gb,8,4096,64,1,1,1,fsdp,none,bf16,{text}\n"
    )
    result = cli("predict", str(table), "-o", str(tmp_path / "o.csv"))
    assert result.returncode == 2
    assert f"row 0, column 'cp': '{text}' is not" in result.stderr
    assert not (tmp_path / "o.csv").exists()
