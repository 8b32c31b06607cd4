"""Power from a user's logs: node-power logs read, measured GPU and node power refit the power
terms, the calibration file carries them and the CLI prints the power error beside throughput."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from trainscale.calibrate.user import calibrate_user
from trainscale.calibrate.user_power import measured_power, refit_user_power
from trainscale.commands.calibrate import power_error_table
from trainscale.errors import InputFileError
from trainscale.ingest.node_power_log import node_power_w
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.energy import PowerTerms, load_power_terms

_ROW = {
    "model": "llama3-8b", "seq_len": 8192, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp", "recompute": "none",
    "precision": "bf16", "framework": "pytorch",
}  # fmt: skip


def _log(path: Path, nodes: int, watts: float) -> Path:
    lines = ["timestamp,node,power_w"]
    for node in range(nodes):
        for second in range(30):
            jitter = 40.0 * ((second % 3) - 1)
            lines.append(f"2026-03-01T12:00:{second:02d}Z,node{node},{watts + jitter + node:.1f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_node_power_log_is_averaged_per_node_then_over_nodes(tmp_path):
    got = node_power_w(_log(tmp_path / "p.csv", 2, 7000.0))
    assert (got.nodes, got.readings) == (2, 60)
    assert got.mean_w == pytest.approx(7000.5)
    start = pd.Timestamp("2026-03-01T12:00:10Z").timestamp()
    assert node_power_w(tmp_path / "p.csv", start=start).readings == 40


@pytest.mark.parametrize(
    ("text", "match"),
    [("time,node,power_w\n1,a,5\n", "missing column"), ("timestamp,node,power_w\n1,a,-5\n",
     "line 2: power_w"), ("timestamp,node,power_w\nnoon,a,5\n", "line 2: timestamp")],
)  # fmt: skip
def test_a_bad_node_power_log_is_named(tmp_path, text, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputFileError, match=match):
        node_power_w(path)


def test_measured_power_moves_the_terms_towards_the_meters(catalogue, tmp_path):
    table = pd.DataFrame(
        [
            {
                **_ROW,
                "num_gpus": 16,
                "measured_power_w_per_gpu": 640.0,
                "node_power_log": str(_log(tmp_path / "n.csv", 2, 8300.0)),
            }
        ]
    )
    table = measured_power(table, lambda p: node_power_w(p).mean_w)
    assert table["measured_node_power_w"].iloc[0] == pytest.approx(8300.5)
    base, terms = load_calibration(), load_power_terms()
    fit = refit_user_power(table, base, terms, catalogue=catalogue)
    errors = fit.errors.set_index("scope")
    assert (errors["refit_mape_pct"] < errors["shipped_mape_pct"]).all()
    assert fit.calibration.power_compute_frac > base.power_compute_frac  # hotter GPUs
    assert fit.terms.host_power_scale != terms.host_power_scale
    assert fit.calibration.calibration_id != base.calibration_id
    text = power_error_table(fit)
    assert "GPU board" in text and "node" in text and "shipped" in text


def test_rows_without_power_leave_the_terms(catalogue):
    table = pd.DataFrame([{**_ROW, "num_gpus": 16}])
    fit = refit_user_power(table, load_calibration(), PowerTerms(), catalogue=catalogue)
    assert fit.terms == PowerTerms()
    assert np.isnan(fit.errors["shipped_mape_pct"]).all()


def test_calibrate_measurements_writes_the_power_block(tmp_path, catalogue, shipped_pilot_errors):
    path = tmp_path / "pilots.csv"
    pd.DataFrame([{**_ROW, "num_gpus": 16, "measured_tokens_per_s_per_gpu": 6050.0,
                   "measured_power_w_per_gpu": 598.8}]).to_csv(path, index=False)  # fmt: skip
    out = tmp_path / "mine.yaml"
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys
    )
    result = calibrate_user(path, out, base=load_calibration(), published=published,
                            catalogue=catalogue, pilot_errors=shipped_pilot_errors,
                            base_terms=load_power_terms())  # fmt: skip
    block = yaml.safe_load(out.read_text())["power"]
    assert block["errors_mape_pct"]["GPU board"]["rows"] == 1
    assert block["errors_mape_pct"]["GPU board"]["refit"] < block["errors_mape_pct"][
        "GPU board"]["shipped"]  # fmt: skip
    assert load_power_terms(out) == result.power.terms
    assert load_calibration(out).power_compute_frac == result.calibration.power_compute_frac
