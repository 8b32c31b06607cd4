"""The smoke study on a real SLURM scheduler (the single-node cluster of .ci/slurm-up).

The run uses the site profile and the test cluster's overrides, exactly as a user would:
``snakemake --profile profiles/slurm --profile tests/slurm/profile``. It checks that every job
went through ``sbatch`` (SLURM job ids in the executor's output, its log files and
``scontrol``) and that the outputs equal those of a local run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")


def _cluster_problem() -> str | None:
    """Why the SLURM test cannot run here, or None when a node answers."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: SLURM is not installed (.ci/slurm-up installs and starts it)"
    try:
        answer = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%T"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "sinfo got no answer in 20 s: slurmctld is not responding (.ci/slurm-up)"
    if answer.returncode != 0:
        return f"sinfo failed, the SLURM daemons are not running (.ci/slurm-up): {answer.stderr}"
    states = answer.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return f"no SLURM node is up (states: {states or 'none'}); slurmd is not running"
    return None


def test_smoke_study_runs_through_sbatch_and_matches_a_local_run(
    smoke_run: Path, workflow_copy, run_snakemake, plan, repo_root: Path
) -> None:
    problem = _cluster_problem()
    if problem:
        pytest.skip(problem)
    workdir = workflow_copy("slurm")
    profiles = [
        "--profile", str(repo_root / "profiles/slurm"),
        "--profile", str(repo_root / "tests/slurm/profile"),
    ]  # fmt: skip
    planned = [job for job in plan(run_snakemake(workdir, "--dry-run").stdout) if job[0] != "all"]

    done = run_snakemake(workdir, *profiles, timeout=600)

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    submitted = _SUBMITTED.findall(output)
    # The study's configurations are a checkpoint, so the dry run plans the jobs up to it and
    # the run adds the chunk jobs it found; every job of the run, "all" aside, went through sbatch.
    steps = [int(total) for total in re.findall(r"\d+ of (\d+) steps \(100%\) done", output)]
    assert steps and len(submitted) == steps[-1] - 1 >= len(planned), output[-4000:]
    for _, slurm_id, log in submitted:
        assert Path(log).name == f"{slurm_id}.log" and Path(log).is_file()
        assert Path(log).is_relative_to(workdir / "results/logs/slurm")
        job = subprocess.run(
            ["scontrol", "show", "job", slurm_id], capture_output=True, text=True, check=False
        )
        assert "JobState=COMPLETED" in job.stdout, job.stdout + job.stderr
        assert "Partition=debug" in job.stdout
    local = {p.relative_to(smoke_run): p for p in (smoke_run / "results").rglob("*.parquet")}
    remote = {p.relative_to(workdir): p for p in (workdir / "results").rglob("*.parquet")}
    assert sorted(local) == sorted(remote)
    for name, path in local.items():
        pd.testing.assert_frame_equal(pd.read_parquet(remote[name]), pd.read_parquet(path))
