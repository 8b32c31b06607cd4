"""A run folder whose name cannot be a {run} wildcard stops the workflow at start-up, named."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize("name", ["x_steps", "my run"])
def test_unusable_run_folder_name_is_named_at_start_up(workflow_copy, run_snakemake, name):
    workdir = workflow_copy(runs=True)
    source = workdir / "data" / "runs" / "megatron_golden_345m"
    target = workdir / "data" / "runs" / name
    shutil.copytree(source, target)
    manifest = target / "run.yaml"
    manifest.write_text(manifest.read_text().replace("megatron_golden_345m", name))

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"'data/runs/{name}'" in output and "cannot be ingested" in output, output[-2000:]
    assert "_steps" in output  # what is allowed
    assert not (workdir / "results").exists()


def test_ingest_job_closes_its_log(workflow_copy, run_snakemake):
    """User trial item 3: `ResourceWarning: unclosed file <… ingest_run/<run>.log>` at exit."""
    workdir = workflow_copy(runs=True)

    done = run_snakemake(workdir, "--cores", "1", "results/measured/megatron_golden_345m.parquet")

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-2000:]
    assert "ResourceWarning" not in output and "unclosed file" not in output
    log = (workdir / "results/logs/ingest_run/megatron_golden_345m.log").read_text()
    assert "wrote results/measured/megatron_golden_345m.parquet" in log
