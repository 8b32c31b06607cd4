"""The smoke study on a real SLURM scheduler (the single-node cluster of .ci/slurm-up).

The run uses the site profile and the test cluster's overrides, exactly as a user would:
``snakemake --profile profiles/slurm --profile tests/slurm/profile`` (fixture
``slurm_smoke_run`` in tests/conftest.py, which skips, with the reason, where no SLURM node
answers). It checks that every job went through ``sbatch`` (SLURM job ids in the executor's
output, its log files and ``scontrol``) and that the outputs equal those of a local run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")
#: One job of ``scontrol show job``: from its JobId= to the next job's.
_SCONTROL_JOB = re.compile(r"^JobId=(\d+) .*?(?=^JobId=|\Z)", re.MULTILINE | re.DOTALL)


def test_smoke_study_runs_through_sbatch_and_matches_a_local_run(
    slurm_smoke_run, smoke_run: Path, plan
) -> None:
    workdir = slurm_smoke_run.workdir
    dry_run, done = slurm_smoke_run.dry_run, slurm_smoke_run.run
    assert dry_run.returncode == 0, dry_run.stderr[-3000:]
    planned = [job for job in plan(dry_run.stdout) if job[0] != "all"]

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    submitted = _SUBMITTED.findall(output)
    # The study's configurations are a checkpoint, so the dry run plans the jobs up to it and
    # the run adds the chunk jobs it found; every job of the run, "all" aside, went through sbatch.
    steps = [int(total) for total in re.findall(r"\d+ of (\d+) steps \(100%\) done", output)]
    assert steps and len(submitted) == steps[-1] - 1 >= len(planned), output[-4000:]
    # what scontrol said of each job right after the run
    jobs = {m.group(1): m.group(0) for m in _SCONTROL_JOB.finditer(slurm_smoke_run.scontrol)}
    for _, slurm_id, log in submitted:
        assert Path(log).name == f"{slurm_id}.log" and Path(log).is_file()
        assert Path(log).is_relative_to(workdir / "results/logs/slurm")
        job = jobs.get(slurm_id, "")
        assert "JobState=COMPLETED" in job, f"job {slurm_id}: {job or slurm_smoke_run.scontrol}"
        assert "Partition=debug" in job
    local = {p.relative_to(smoke_run): p for p in (smoke_run / "results").rglob("*.parquet")}
    remote = {p.relative_to(workdir): p for p in (workdir / "results").rglob("*.parquet")}
    assert sorted(local) == sorted(remote)
    for name, path in local.items():
        pd.testing.assert_frame_equal(pd.read_parquet(remote[name]), pd.read_parquet(path))
