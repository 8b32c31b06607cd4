"""A study calibrated on its own pilots: ``calibration: {measurements: [...]}`` makes the rule
calibrate_study ingest and calibrate them into results/calibration/<study>.yaml, which the
study is then simulated with (rules/studies.smk, rules/common.smk)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.sim.calibration import load_calibration

pytestmark = pytest.mark.workflow

NAME = "pilot"
#: The pilots: data/published/measurements.csv rows 77-84 (CSV data rows, 1-based as
#: trainscale's published tables count them in ``csv_row``), llm-foundry on H100 at 8-64 GPUs,
#: citation "MosaicML llm-foundry ..."; measured = the published tokens/s per GPU.
PILOT_CSV_ROWS = list(range(77, 85))
#: The configuration columns a pilot table carries.
KEEP = [
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len", "global_batch",
    "micro_batch", "gpu", "num_gpus", "gpus_per_node", "tp", "pp", "sharding", "recompute",
    "precision", "framework", "attention_kernel",
]  # fmt: skip


def _pilot_table(workdir: Path) -> pd.DataFrame:
    from trainscale.published.measurements import load_published
    from trainscale.sim.catalogue import load_catalogue

    catalogue = load_catalogue()
    rows = load_published(
        workdir / "data" / "published" / "measurements.csv",
        hardware=catalogue.hardware, models=catalogue.models,
    ).throughput  # fmt: skip
    rows = rows[rows["csv_row"].isin(PILOT_CSV_ROWS)]
    assert len(rows) == len(PILOT_CSV_ROWS)
    assert rows["citation"].str.startswith("MosaicML").all()
    return rows[[*KEEP, "citation"]].assign(
        measured_tokens_per_s_per_gpu=rows["observed_tokens_per_s_per_gpu"]
    )


def _study(workdir: Path, measurements: list[str]) -> None:
    studies = workdir / "config" / "studies"
    study = yaml.safe_load((studies / "smoke.yaml").read_text())
    study["description"] = "The smoke study, simulated with a calibration on its own pilots."
    study["calibration"] = {"measurements": measurements}
    (studies / f"{NAME}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))


def test_a_study_is_simulated_with_the_calibration_of_its_own_pilots(
    workflow_copy, run_snakemake
) -> None:
    workdir = workflow_copy(studies=(NAME,), runs=True)
    (workdir / "pilots").mkdir()
    _pilot_table(workdir).to_csv(workdir / "pilots" / "foundry.csv", index=False)
    _study(workdir, ["pilots/foundry.csv", "data/runs/megatron_golden_345m"])

    figure = f"reports/studies/{NAME}/scaling.svg"
    done = run_snakemake(
        workdir, "--cores", "2", f"results/sim/{NAME}.parquet", figure, timeout=600
    )

    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    mine = load_calibration(workdir / "results" / "calibration" / f"{NAME}.yaml")
    shipped = load_calibration(workdir / "data" / "calibration.yaml")
    assert mine.calibration_id != shipped.calibration_id
    stored = yaml.safe_load((workdir / "results" / "calibration" / f"{NAME}.yaml").read_text())
    files = [f["file"] for f in stored["measurements"]["files"]]
    assert files == ["pilots/foundry.csv", "data/runs/megatron_golden_345m"]
    assert [f["rows"] for f in stored["measurements"]["files"]] == [8, 1]
    simulated = pd.read_parquet(workdir / "results" / "sim" / f"{NAME}.parquet")
    assert set(simulated["calibration_id"]) == {mine.calibration_id}
    log = (workdir / "results" / "logs" / "calibrate_study" / f"{NAME}.log").read_text()
    assert "shipped (no refit)" in log and "leave-largest-scale-out" in log
    # the figure draws the pilots and names the study's own calibration
    pilots = pd.read_parquet(workdir / "results" / "calibration" / f"{NAME}.pilots.parquet")
    assert len(pilots) == 9 and (pilots["measured_tokens_per_s_per_gpu"] > 0).all()
    text = " ".join((workdir / figure).read_text().split())
    assert "measured pilot runs" in text
    assert f"calibration {mine.calibration_id}" in text and "own 9 measured pilot runs" in text


def test_a_missing_measurement_path_stops_the_run_at_start_up(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy(studies=(NAME,))
    _study(workdir, ["pilots/none.csv"])

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "key 'calibration': measurements: no such file or folder 'pilots/none.csv'" in output
    assert not (workdir / "results").exists()
