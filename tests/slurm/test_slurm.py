"""The smoke study on a real SLURM scheduler (the single-node cluster of .ci/slurm-up).

The run uses the site profile and the test cluster's overrides, exactly as a user would:
``snakemake --profile profiles/slurm --profile tests/slurm/profile results/sim/smoke.parquet``
(fixture ``slurm_smoke_run`` in tests/conftest.py, which skips, with the reason, where no SLURM
node answers): the study's configurations (a checkpoint), the simulate jobs it counts and their
merge. It checks that every job went through ``sbatch`` (SLURM job ids in the executor's output,
its log files and ``scontrol``) and that the results equal the library's, called directly (as a
local run's do: tests/workflow/test_workflow_run.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.library import library_results
from trainscale.io.parquet import conform, read_parquet
from trainscale.schema import RESULT_COLUMNS

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")
#: One job of ``scontrol show job``: from its JobId= to the next job's.
_SCONTROL_JOB = re.compile(r"^JobId=(\d+) .*?(?=^JobId=|\Z)", re.MULTILINE | re.DOTALL)


def test_smoke_study_runs_through_sbatch_and_matches_the_library(
    slurm_smoke_run, plan, repo_root: Path
) -> None:
    workdir = slurm_smoke_run.workdir
    dry_run, done = slurm_smoke_run.dry_run, slurm_smoke_run.run
    assert dry_run.returncode == 0, dry_run.stderr[-3000:]
    planned = plan(dry_run.stdout)

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    submitted = _SUBMITTED.findall(output)
    # The study's configurations are a checkpoint, so the dry run plans the jobs up to it and
    # the run adds the simulate jobs it counted; every job of the run went through sbatch.
    assert ("study_configurations", "study=smoke") in planned
    steps = [int(total) for total in re.findall(r"\d+ of (\d+) steps \(100%\) done", output)]
    assert steps and len(submitted) == steps[-1] == 4 > len(planned), output[-4000:]
    # what scontrol said of each job right after the run
    jobs = {m.group(1): m.group(0) for m in _SCONTROL_JOB.finditer(slurm_smoke_run.scontrol)}
    for _, slurm_id, log in submitted:
        assert Path(log).name == f"{slurm_id}.log" and Path(log).is_file()
        assert Path(log).is_relative_to(workdir / "results/logs/slurm")
        job = jobs.get(slurm_id, "")
        assert "JobState=COMPLETED" in job, f"job {slurm_id}: {job or slurm_smoke_run.scontrol}"
        assert "Partition=debug" in job
    # the executor's log folder names each job's rule: results/logs/slurm/rule_<rule>/…
    logs = workdir / "results/logs/slurm"
    rules = sorted(Path(log).relative_to(logs).parts[0] for _, _, log in submitted)
    expected_rules = ["study_configurations", "simulate_chunk", "simulate_chunk", "simulate_study"]
    assert rules == sorted(f"rule_{rule}" for rule in expected_rules), rules
    configurations = sorted((workdir / "results/studies/smoke/configurations").glob("*.parquet"))
    assert [pq.read_metadata(p).num_rows for p in configurations] == [4, 4]
    sim = read_parquet(workdir / "results/sim/smoke.parquet", RESULT_COLUMNS)
    expected = library_results(workdir, repo_root)
    pd.testing.assert_frame_equal(conform(sim, RESULT_COLUMNS), conform(expected, RESULT_COLUMNS))
