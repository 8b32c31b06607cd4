"""data/calibration.yaml: reproducible by `trainscale calibrate`, within bounds, hashed."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.calibrate.shipped import calibrate
from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.published.power_rows import load_power_rows
from trainscale.published.sources import load_sources
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.parameters import SHARED_PARAMETERS, parameters


def test_stored_values_are_within_bounds_and_hash_matches() -> None:
    stored = yaml.safe_load((data_dir() / "calibration.yaml").read_text())
    calibration = load_calibration()
    assert stored["calibration_id"] == calibration.calibration_id
    for spec in parameters(calibration.frameworks):
        if spec.name not in stored["parameters"]:  # MoE parameters are written once fitted
            assert spec.group == "moe" and calibration.value(spec.name) == spec.default
            continue
        entry = stored["parameters"][spec.name]
        assert spec.lower <= entry["value"] <= spec.upper
        assert entry["description"] and entry["unit"]
    assert stored["not_represented"], "rows the simulator cannot represent are listed"


def test_calibrate_reproduces_the_stored_file(
    tmp_path: Path, held_out: pd.DataFrame, shipped_pilot_errors: pd.DataFrame, published, catalogue
) -> None:
    out = tmp_path / "calibration.yaml"
    # held_out and shipped_pilot_errors: what calibrate() computes itself when not given them,
    # held_out_predictions() of the same published data and pilot_errors() of it with the
    # shipped calibration (golden results, tests/data/regenerate.py)
    published_dir = data_dir() / "published"
    power = load_power_rows(published_dir / "power-measurements.csv", catalogue,
                            load_sources(published_dir / "sources.yaml",
                                         frameworks=catalogue.framework_keys))  # fmt: skip
    calibrate(
        out, published, catalogue=catalogue, held_out=held_out.copy(),
        pilot_errors=shipped_pilot_errors.copy(), power_rows=power,
    )  # fmt: skip
    assert out.read_text() == (data_dir() / "calibration.yaml").read_text()


def test_stored_values_drop_the_solver_noise_that_differs_between_machines() -> None:
    """A refit on another CPU left DeepSpeed's FP8 offset (no row moves it) at -4e-24 where the
    shipped file had +1.3e-24, and the framework offsets near 0 differed in their 6th digit:
    values are kept to 6 significant digits or a millionth of their bound range, whichever is
    coarser, in one rounding."""
    from trainscale.calibrate.fit import round_calibration

    base = Calibration.defaults(load_catalogue().framework_keys)
    noisy = base.with_values(
        fp8_gemm_offset_deepspeed=-4.03975e-24,  # bounds -0.4 .. 0.4: places of 1e-7
        gemm_efficiency_offset_deepspeed=-0.00615171234,
        fp8_gemm_offset_pytorch=-0.0031652049,
        nic_efficiency=0.92630849,
    )
    stored = round_calibration(noisy)
    assert stored.framework_offsets["deepspeed"]["fp8_gemm"] == 0.0
    assert (
        math.copysign(1.0, stored.framework_offsets["deepspeed"]["fp8_gemm"]) == 1.0
    )  # no negative zero
    assert stored.value("gemm_efficiency_offset_deepspeed") == -0.0061517
    assert stored.value("fp8_gemm_offset_pytorch") == -0.0031652
    assert stored.nic_efficiency == 0.926308  # 6 significant digits, rounded once
    assert round_calibration(stored) == stored


def test_out_of_bounds_value_is_rejected_with_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "calibration.yaml"
    bad.write_text("parameters:\n  nic_efficiency:\n    value: 3.0\n")
    with pytest.raises(InputFileError, match=r"parameters\.nic_efficiency\.value: 3\.0 outside"):
        load_calibration(bad)


def test_the_id_changes_with_any_value() -> None:
    base = Calibration.defaults(load_catalogue().framework_keys)
    assert base.calibration_id != base.with_values(nic_efficiency=0.9).calibration_id


def test_cli_refit_without_output_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """User trial item 6: `trainscale calibrate` with no option overwrote the shipped
    data/calibration.yaml. A refit now needs -o; without it nothing is fitted or written."""
    import trainscale.calibrate.shipped
    from trainscale.cli import main

    calls = []
    monkeypatch.setattr(trainscale.calibrate.shipped, "calibrate", lambda *a, **k: calls.append(a))
    shipped = data_dir() / "calibration.yaml"
    before = shipped.stat().st_mtime_ns

    assert main(["calibrate"]) == 2

    err = capsys.readouterr().err
    assert "a refit needs -o FILE" in err
    assert "-o data/calibration.yaml replaces the shipped calibration" in err
    assert calls == []
    assert shipped.stat().st_mtime_ns == before
    assert main(["calibrate", "--published", "data/published/measurements.csv"]) == 2
    assert calls == []


# --------------------------------------------------------------------------------------------
# The power anchor is a data record (data/published/sources.yaml), not the paper's module.


def test_no_power_parameter_is_fitted_to_the_published_anchor(published, catalogue) -> None:
    """The anchor is a figure the prediction is checked against: the calibration fits no power
    parameter, so the shipped GPU-board fractions are their sourced defaults, and the anchor's
    predicted drop is what the paper setup gives."""
    from trainscale.calibrate.fit import power_drop_pct

    shipped = load_calibration()
    anchor = published.power_anchor
    assert anchor is not None and anchor.drop_pct == 5.87
    for spec in (p for p in SHARED_PARAMETERS if p.group == "power"):
        assert not spec.fitted and getattr(shipped, spec.name) == spec.default, spec.name
    assert power_drop_pct(shipped, anchor, catalogue=catalogue) > anchor.drop_pct


def test_the_calibration_does_not_import_the_paper() -> None:
    """calibrate/ sits below paper/ (pyproject's layers): it reads the anchor as data."""
    import ast

    import trainscale.calibrate

    folder = Path(trainscale.calibrate.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            assert not any(n.startswith("trainscale.paper") for n in names), path


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_calibration_path_that_is_not_a_file_is_an_error_never_the_priors(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "mine.yaml"
    if kind == "folder":
        path.mkdir()
    with pytest.raises(InputFileError, match=r"mine\.yaml") as raised:
        load_calibration(path)
    assert ("does not exist" if kind == "missing" else "not a regular file") in str(raised.value)
