"""A study that will plan thousands of simulate jobs says how many and how long before it starts
(trainscale.study.scale, rules/common.smk, the study_configurations checkpoint)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from trainscale.study.scale import LARGE_STUDY_JOBS, RATES, estimate_s, size_note

#: 10^7 grid rows: 10 GPU counts x 10 batches x 10 seq_lens x 10^4 vocab sizes.
LARGE = {
    "description": "ten million rows",
    "fixed": {
        "model": "llama2-7b", "micro_batch": 1, "gpu": "h100-sxm-80gb", "tp": 1, "pp": 1,
        "sharding": "fsdp", "recompute": "none", "precision": "bf16",
    },
    "sweep": {
        "num_gpus": [8 * 2**k for k in range(10)],
        "global_batch": [256 * 2**k for k in range(10)],
        "seq_len": [1024 * (k + 1) for k in range(10)],
        "vocab": [32_000 + k for k in range(10_000)],
    },
}  # fmt: skip


def test_a_ten_million_row_study_says_jobs_and_time() -> None:
    note = size_note("config/studies/big.yaml", 10**7, 2000, 2)
    assert note is not None
    assert note.startswith("note: config/studies/big.yaml: 10,000,000 grid rows will plan up to ")
    assert "5,000 simulate jobs of 2,000 rows" in note
    expected = estimate_s(10**7, 10**7, 2000, 2)
    assert f"estimated {expected / 60:.0f} min at 2 core(s)" in note
    assert "benchmarks/study_rate.py" in note  # the rates' source is named
    assert "rows_per_job" in note  # and what to change


def test_the_estimate_is_expansion_then_jobs_shared_by_the_cores() -> None:
    one = estimate_s(10**6, 10**6, 1000, 1)
    expand = RATES.job_start_s + 10**6 / RATES.expand_rows_per_s
    jobs = 1000 * RATES.job_start_s + 10**6 / RATES.simulate_rows_per_s
    assert one == expand + jobs
    assert estimate_s(10**6, 10**6, 1000, 4) == expand + jobs / 4


def test_after_expansion_the_note_counts_the_kept_rows() -> None:
    note = size_note("s.yaml", 10**7, 2000, None, kept_rows=4_000_000)
    assert note is not None and "keeps 4,000,000 rows: 2,000 simulate jobs" in note
    assert "at 1 core(s)" in note


def test_small_studies_get_no_note() -> None:
    assert size_note("s.yaml", 12, 4, 2) is None
    assert size_note("s.yaml", (LARGE_STUDY_JOBS - 1) * 10, 10, 64) is None


def test_the_workflow_prints_the_note_at_start_up(
    workflow_copy: Callable[..., Path],
    run_snakemake: Callable[..., object],
) -> None:
    workdir = workflow_copy(studies=("big",))
    (workdir / "config" / "studies" / "big.yaml").write_text(yaml.safe_dump(LARGE))
    done = run_snakemake(workdir, "-n", "--cores", "2", "results/sim/big.parquet")
    assert done.returncode == 0, done.stderr[-2000:]  # type: ignore[attr-defined]
    # printed while the workflow is parsed, before the (dry-run) plan of any job
    note = "note: config/studies/big.yaml: 10,000,000 grid rows will plan up to 5,000 "
    assert note in done.stderr  # type: ignore[attr-defined]
