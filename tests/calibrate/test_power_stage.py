"""The power stage of calibrate: metered rows read, host power fitted source-balanced, held-out
errors per source; the throughput calibration untouched."""

from __future__ import annotations

import numpy as np
import pytest

from trainscale.calibrate.power import calibrate_power, power_block
from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.published.power_rows import PowerRows, load_power_rows
from trainscale.published.sources import load_sources
from trainscale.sim.calibration import load_calibration
from trainscale.sim.energy import load_power_terms
from trainscale.sim.energy.terms import parse_power_terms

_CSV = data_dir() / "published" / "power-measurements.csv"


@pytest.fixture(scope="module")
def rows(catalogue) -> PowerRows:
    sources = load_sources(
        data_dir() / "published" / "sources.yaml", frameworks=catalogue.framework_keys
    )
    return load_power_rows(_CSV, catalogue, sources)


@pytest.fixture(scope="module")
def fit(rows, catalogue, shipped_calibration):
    return calibrate_power(rows, shipped_calibration, catalogue)


def test_every_llm_row_of_the_file_is_fitted_or_rejected_with_a_reason(rows):
    lines = sorted([*rows.rows["csv_row"], *rows.rejects["csv_row"]])
    assert lines == list(range(2, 18))  # 16 data rows
    fitted = rows.rows.set_index("csv_row")
    assert set(fitted["metric"]) == {"node_power_w_avg", "energy_j_per_token"}
    assert set(fitted["citation"]) == {
        "MLPerf Training v4.0 SMC power logs",
        "MLPerf Training v4.1 Dell power logs",
    }
    gpt3 = fitted.loc[8]
    assert (gpt3["model"], gpt3["system"], gpt3["tp"], gpt3["pp"], gpt3["vpp"]) == (
        "gpt3-175b", "smc-h100-immersion", 4, 8, 12,
    )  # fmt: skip
    assert fitted.loc[12, "system"] == "dell-xe9680-h100"
    reasons = rows.rejects.set_index("csv_row")["reason"]
    assert "BERT" in reasons[10] and "DC" in reasons[2] and "switch" in reasons[17]


def test_fit_moves_host_scale_towards_the_meters_and_reports_every_source(fit):
    assert 0.5 <= fit.terms.host_power_scale <= 2.0
    held = fit.held_out.set_index(["citation", "metric"])["error_pct"]
    assert len(held) == 4
    node = fit.in_sample[fit.in_sample["metric"].eq("node_power_w_avg")]
    assert np.all(np.abs(node["error_pct"]) < 15)
    assert fit.terms.node_power_log_sigma > 0 and fit.terms.energy_log_sigma > 0


def test_scaled_meters_scale_the_host_term(rows, catalogue, shipped_calibration, fit):
    hotter = rows.rows.assign(observed=rows.rows["observed"] * 1.1)
    refit = calibrate_power(PowerRows(hotter, rows.rejects), shipped_calibration, catalogue)
    assert refit.terms.host_power_scale > fit.terms.host_power_scale + 0.1


def test_block_round_trips_and_the_shipped_block_is_this_fit(fit, tmp_path):
    block = power_block(fit, "data/published/power-measurements.csv")
    assert parse_power_terms(tmp_path / "x.yaml", block) == fit.terms
    assert load_power_terms() == fit.terms  # data/calibration.yaml holds this fit
    with pytest.raises(InputFileError, match="host_power_scale"):
        parse_power_terms(tmp_path / "x.yaml", {"terms": {"host_power_scale": 9.0}})


def test_power_stage_leaves_throughput_calibration_alone(shipped_calibration, tmp_path):
    import yaml

    from trainscale.paths import data_dir

    assert load_calibration().calibration_id == shipped_calibration.calibration_id
    # the power block is not part of calibration_id: the file without it has the same id
    data = yaml.safe_load((data_dir() / "calibration.yaml").read_text(encoding="utf-8"))
    assert "power" in data
    del data["power"]
    bare = tmp_path / "calibration.yaml"
    bare.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert load_calibration(bare).calibration_id == shipped_calibration.calibration_id


def test_validate_prints_held_out_power_error_per_source(fit):
    from trainscale.commands.validate_power import format_power_table

    text = format_power_table(fit)
    for row in fit.held_out.itertuples():
        (line,) = [x for x in text.splitlines() if x.startswith(row.citation) and row.metric in x]
        assert f"{row.error_pct:+.2f}%" in line


def test_validate_prints_each_runs_throughput_steady_and_over_the_run(fit):
    from trainscale.commands.validate_power import format_throughput_lines

    text = format_throughput_lines(fit)
    dell = next(x for x in text.splitlines() if x.startswith("MLPerf Training v4.1 Dell"))
    steady, run, metered, error = dell.split()[-4:]
    # the LoRA run's evaluations slow the whole run below the steady state
    assert float(run) < float(steady) and float(metered) == 1341.0
    assert float(error.rstrip("%")) == pytest.approx(100 * (float(run) / 1341.0 - 1), abs=0.01)
