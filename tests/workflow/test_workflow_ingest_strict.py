"""Config key ``ingest.strict``: a run whose logs warn fails its ingest_run job when true, and is
ingested with the warning in its ``warnings`` column when false (the default)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.ingest.test_damage import make_run

pytestmark = pytest.mark.workflow

WARNING = "power logged for 1 of the job's 2 GPUs"


def _warned_run(workdir: Path) -> None:
    """data/runs/synth: the damage tests' synthetic run with GPU 1 never in its power log."""
    run = make_run(workdir / "data" / "runs")
    power = run / "logs" / "power.csv"
    power.write_text("".join(x for x in power.read_text().splitlines(True) if ", 1, " not in x))


def _set_strict(workdir: Path, strict: bool | None) -> None:
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    if strict is None:
        config.pop("ingest", None)  # the schema's default
    else:
        config["ingest"] = {"strict": strict}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.mark.parametrize("strict", [None])  # the schema default; config.yaml says false
def test_non_strict_ingests_the_warned_run_with_its_warning(workflow_copy, run_snakemake, strict):
    workdir = workflow_copy()
    _warned_run(workdir)
    _set_strict(workdir, strict)

    done = run_snakemake(workdir, "--cores", "1", "results/measured/synth.parquet")

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    rows = pd.read_parquet(workdir / "results/measured/synth.parquet")
    assert WARNING in rows["warnings"].iloc[0]
    assert WARNING in (workdir / "results/logs/ingest_run/synth.log").read_text()


def test_strict_fails_the_warned_run_and_writes_nothing(workflow_copy, run_snakemake):
    workdir = workflow_copy()
    _warned_run(workdir)
    _set_strict(workdir, True)

    done = run_snakemake(workdir, "--cores", "1", "results/measured/synth.parquet")

    assert done.returncode != 0
    log = (workdir / "results/logs/ingest_run/synth.log").read_text()
    assert "error (config ingest.strict: warnings are errors):" in log and WARNING in log, log
    assert "Traceback" not in log
    assert not (workdir / "results/measured/synth.parquet").exists()
    assert not (workdir / "results/measured/synth_steps.parquet").exists()


def test_strict_is_a_boolean(workflow_copy, run_snakemake):
    workdir = workflow_copy()
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["ingest"] = {"strict": "yes"}
    path.write_text(yaml.safe_dump(config, sort_keys=False))

    done = run_snakemake(workdir, "--dry-run")

    assert done.returncode != 0
    assert "strict" in done.stdout + done.stderr
