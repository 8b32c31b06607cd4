"""A 2-rank CPU bench through SLURM: rule bench_run (rules/bench.smk) submitted by Snakemake's
SLURM executor with profiles/slurm-bench and the test cluster's overrides (tests/slurm/profile),
on the single-node cluster of .ci/slurm-up (2 CPUs). The job runs `srun torchrun` with the
rendezvous at the job's first node; rule bench_collect ingests the run folder.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

from trainscale.ingest.manifest import load_manifest
from trainscale.sim.catalogue import load_catalogue

pytestmark = [pytest.mark.slurm, pytest.mark.bench]

#: The catalogues a run is checked and ingested with: the shipped ones.
_CATALOGUE = load_catalogue()
SHIPPED = {"hardware": _CATALOGUE.hardware, "models": _CATALOGUE.models}


def test_cpu_bench_through_slurm(slurm_bench_run):
    # the run: fixture slurm_bench_run (tests/bench/conftest.py), once per session
    workdir, done = slurm_bench_run.workdir, slurm_bench_run.process
    log = workdir / "results" / "logs" / "bench_run" / "cpu_smoke" / "n1_fsdp2.log"
    bench_log = log.read_text()[-4000:] if log.is_file() else "(no bench log)"
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n--- bench log ---\n{bench_log}"
    # It went through sbatch: the executor kept the job's SLURM log under its job id.
    slurm_logs = list((workdir / "results" / "logs" / "slurm" / "rule_bench_run").rglob("*.log"))
    assert len(slurm_logs) == 1 and slurm_logs[0].stem.isdigit()
    run_dir = workdir / "results" / "bench" / "cpu_smoke" / "cpu_smoke_n1_fsdp2"
    manifest = load_manifest(run_dir, **SHIPPED)
    assert manifest.configuration["num_gpus"] == 2 and manifest.cluster["nodes"] == 1
    assert "harness timing: 8 steps after 4 warm-up" in bench_log
    rows = pd.read_parquet(workdir / "results" / "bench" / "cpu_smoke.parquet")
    assert rows["run_id"].tolist() == ["cpu_smoke_n1_fsdp2"]
    assert rows["tokens_per_s"].iloc[0] > 0 and rows["n_steps"].iloc[0] == 8
    assert os.path.getsize(run_dir / "traces" / "trace_rank1.json.gz") > 0
