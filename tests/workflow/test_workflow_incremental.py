"""Reproducible and incremental: reruns, edits, identical bytes, interruption and failure."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import copy_workflow

pytestmark = pytest.mark.workflow


def _parquet_files(workdir: Path) -> dict[str, Path]:
    results = workdir / "results"
    return {p.relative_to(results).as_posix(): p for p in sorted(results.rglob("*.parquet"))}


def _mtimes(workdir: Path) -> dict[str, int]:
    return {name: path.stat().st_mtime_ns for name, path in _parquet_files(workdir).items()}


#: Targets that build every Parquet file of the default target: all of it but the per-study fits
#: tables and scaling figures (reports/studies), which hold no Parquet and are the slowest jobs of
#: the smoke run. The tests that compare a run's Parquet files with smoke_run's build only these;
#: their check that both runs have the same Parquet file names catches one these would miss.
PARQUET_TARGETS = ("results/dataset", "results/validation.parquet")

#: The line of data/calibration.yaml that the second study's own calibration changes.
NIC_EFFICIENCY = "  nic_efficiency:\n    value: "


@pytest.fixture(scope="module")
def two_studies(
    smoke_run: Path, tmp_path_factory: pytest.TempPathFactory, copy_finished, run_snakemake
) -> tuple[Path, str]:
    """The finished smoke run with a second study, "other", added to its config and run with
    ``--cores 2``: the smoke study with Llama-2 13B, simulated with its own calibration file
    mine.yaml (the shipped one with nic_efficiency 0.7). Returns the folder, which tests copy
    (``copy_finished``) and do not modify, and the output of the run that added the study."""
    workdir = copy_finished(smoke_run, tmp_path_factory.mktemp("two_studies") / "run")
    config_path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["studies"] = ["smoke", "other"]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    shipped = (workdir / "data" / "calibration.yaml").read_text()
    assert NIC_EFFICIENCY in shipped
    (workdir / "mine.yaml").write_text(shipped.replace(NIC_EFFICIENCY, NIC_EFFICIENCY + "0.7 #"))
    studies = workdir / "config" / "studies"
    other = yaml.safe_load((studies / "smoke.yaml").read_text())
    other["fixed"]["model"] = "llama2-13b"
    other["calibration"] = "mine.yaml"
    (studies / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))

    done = run_snakemake(workdir, "--cores", "2")

    assert done.returncode == 0, done.stderr[-3000:]
    return workdir, done.stdout + done.stderr


def test_a_second_run_with_nothing_changed_runs_no_job(smoke_run: Path, run_snakemake) -> None:
    before = _mtimes(smoke_run)

    done = run_snakemake(smoke_run, "--cores", "2")

    assert done.returncode == 0, done.stderr[-3000:]
    assert "Nothing to be done" in done.stdout + done.stderr
    assert _mtimes(smoke_run) == before


def test_the_same_inputs_give_byte_identical_parquet(
    smoke_run: Path, interrupted_run: InterruptedRun
) -> None:
    # a second run of the same inputs in another folder (interrupted once, then resumed)
    workdir = interrupted_run.workdir
    assert interrupted_run.resumed.returncode == 0, interrupted_run.resumed.stderr[-3000:]

    first, second = _parquet_files(smoke_run), _parquet_files(workdir)
    assert sorted(first) == sorted(second)
    assert len(first) >= 8  # 2 configuration chunks, rejects, sim, published, validation, 2 parts
    different = [n for n in first if first[n].read_bytes() != second[n].read_bytes()]
    assert not different, f"bytes differ between two runs: {different}"


def test_editing_one_study_reruns_that_study_and_what_depends_on_it(
    two_studies: tuple[Path, str], copy_finished, tmp_path: Path, run_snakemake, plan
) -> None:
    finished, added = two_studies  # the smoke study done; a second study joined it
    assert ("simulate_study", "study=other") in plan(added)
    assert not [job for job in plan(added) if "smoke" in job[1]]
    workdir = copy_finished(finished, tmp_path / "edited")
    studies = workdir / "config" / "studies"
    other = yaml.safe_load((studies / "other.yaml").read_text())
    before = _mtimes(workdir)

    other["sweep"]["num_gpus"].append(128)  # 15 grid rows, 10 kept -> 3 jobs of rows_per_job 4
    (studies / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    dry = run_snakemake(workdir, "--dry-run")
    second = run_snakemake(workdir, "--cores", "2")

    assert dry.returncode == 0, dry.stderr[-3000:]
    # the simulate jobs are planned once the checkpoint study_configurations has counted them
    rerun = [("all", ""), ("dataset", ""), ("simulate_study", "study=other")]
    rerun += [("study_configurations", "study=other"), ("study_fits", "study=other")]
    rerun += [("study_points", "study=other"), ("study_figure", "study=other, figure=scaling")]
    assert plan(dry.stdout + dry.stderr) == sorted(rerun)
    assert second.returncode == 0, second.stderr[-3000:]
    chunks = [("simulate_chunk", f"study=other, chunk={i}") for i in range(3)]
    assert plan(second.stdout + second.stderr) == sorted([*rerun, *chunks])
    after = _mtimes(workdir)
    unchanged = {n for n in before if before[n] == after.get(n)}
    kept = ("studies/smoke/", "sim/smoke", "published", "validation")
    assert {n for n in before if n.startswith(kept)} <= unchanged
    assert "sim/other.parquet" not in unchanged
    assert "dataset/source=sim/study=other/part-0.parquet" not in unchanged
    assert pq.read_metadata(workdir / "results/sim/other.parquet").num_rows == 10


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass(frozen=True)
class InterruptedRun:
    """A copy of the workflow whose run of :data:`PARQUET_TARGETS` was interrupted (Ctrl-C) while
    a job ran, then resumed (:func:`interrupted_run`)."""

    workdir: Path
    #: the interrupted run's exit status
    interrupted: int
    #: Snakemake's incomplete markers right after the interruption
    markers: list[str]
    #: the Parquet files present then that do not read as Parquet (name: error)
    unreadable: list[str]
    #: the resumed run (``--cores 2``)
    resumed: subprocess.CompletedProcess[str]


def _interrupt_and_resume(workdir: Path) -> InterruptedRun:
    """The work of :func:`interrupted_run` in the fresh copy ``workdir``."""
    incomplete = workdir / ".snakemake" / "incomplete"
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINSCALE_DATA", "SNAKEMAKE_PROFILE")}
    run = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", *PARQUET_TARGETS],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        # A shell without job control starts background jobs with SIGINT ignored, and children
        # inherit that: restore the default so that this Ctrl-C reaches Snakemake.
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    while not (incomplete.is_dir() and any(incomplete.iterdir())):  # a job is running
        assert run.poll() is None and time.monotonic() < deadline, "no job started"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
    interrupted = run.wait(timeout=60)
    markers = sorted(path.name for path in incomplete.iterdir())
    unreadable = []
    for name, path in _parquet_files(workdir).items():
        try:
            pq.read_metadata(path)
        except Exception as error:  # any failure to read is the finding
            unreadable.append(f"{name}: {error}")

    resumed = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *PARQUET_TARGETS],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return InterruptedRun(workdir, interrupted, markers, unreadable, resumed)


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory: pytest.TempPathFactory) -> InterruptedRun:
    """A fresh copy of the workflow whose run of :data:`PARQUET_TARGETS` (``--cores 1``) got
    Ctrl-C while a job ran and was then resumed (``--cores 2``); tests read it, do not modify
    it. Its outputs are also the second run of the same inputs that
    :func:`test_the_same_inputs_give_byte_identical_parquet` compares with smoke_run's."""
    return _interrupt_and_resume(copy_workflow(tmp_path_factory.mktemp("interrupted") / "run"))


def test_an_interrupted_run_resumes_and_gives_the_same_outputs(
    smoke_run: Path, interrupted_run: InterruptedRun
) -> None:
    assert interrupted_run.interrupted != 0
    assert interrupted_run.markers, "the interrupted job left no incomplete marker"
    assert not interrupted_run.unreadable  # every output present is complete
    resumed = interrupted_run.resumed

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not any((interrupted_run.workdir / ".snakemake" / "incomplete").iterdir())
    reference, files = _parquet_files(smoke_run), _parquet_files(interrupted_run.workdir)
    assert sorted(files) == sorted(reference)
    assert all(files[n].read_bytes() == reference[n].read_bytes() for n in files)


def test_an_output_marked_incomplete_is_rebuilt_by_the_default_profile(
    finished_smoke_run, run_snakemake, plan
) -> None:
    workdir = finished_smoke_run("marked")
    # What a run killed while writing results/sim/smoke.parquet leaves behind: the file and
    # Snakemake's marker for it (.snakemake/incomplete/<urlsafe base64 of the path>).
    (workdir / "results/sim/smoke.parquet").write_bytes(b"PAR1 truncated")
    marker = base64.urlsafe_b64encode(b"results/sim/smoke.parquet").decode()
    (workdir / ".snakemake" / "incomplete" / marker).touch()

    without = run_snakemake(workdir, "--dry-run", "--workflow-profile", "none")
    with_profile = run_snakemake(workdir, "--dry-run")

    assert without.returncode != 0
    assert "incomplete" in (without.stdout + without.stderr).lower()
    assert with_profile.returncode == 0, with_profile.stderr[-3000:]
    planned = plan(with_profile.stdout + with_profile.stderr)
    assert ("simulate_study", "study=smoke") in planned
    assert ("study_configurations", "study=smoke") not in planned  # upstream of it: complete


def test_a_failing_job_leaves_no_output_and_its_log_says_why(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy("failing")
    study = workdir / "config" / "studies" / "smoke.yaml"
    data = yaml.safe_load(study.read_text())
    data["sweep"]["tp"] = [1, 3]  # tp 3 does not divide Llama-2 7B's 32 heads
    data["filters"] = {"drop_invalid": False}
    study.write_text(yaml.safe_dump(data, sort_keys=False))

    done = run_snakemake(workdir, "--cores", "2")

    assert done.returncode != 0
    table = workdir / "results/studies/smoke"
    assert not (table / "configurations").exists()
    assert not (table / "rejects.parquet").exists()
    assert not (table / "chunk_counts.json").exists()
    assert not list(table.glob(".*tmp"))
    log = (workdir / "results/logs/study_configurations/smoke.log").read_text()
    assert "error: config/studies/smoke.yaml: 4 invalid value(s)" in log
    assert "row 1, column 'tp': tp 3 does not divide heads 32" in log
    assert "tp 3 does not divide heads 32" in done.stdout + done.stderr  # show-failed-logs


def test_a_study_calibration_file_is_used_and_editing_it_reruns_that_study(
    two_studies: tuple[Path, str], copy_finished, tmp_path: Path, run_snakemake, plan
) -> None:
    from trainscale.sim.calibration import load_calibration

    workdir = copy_finished(two_studies[0], tmp_path / "recalibrated")
    mine = workdir / "mine.yaml"  # the study "other" names it
    assert yaml.safe_load((workdir / "config/studies/other.yaml").read_text())["calibration"] == (
        "mine.yaml"
    )
    ids = pq.read_table(workdir / "results/sim/other.parquet", columns=["calibration_id"])
    assert set(ids.column(0).to_pylist()) == {load_calibration(mine).calibration_id}
    smoke = pq.read_table(workdir / "results/sim/smoke.parquet", columns=["calibration_id"])
    assert load_calibration(mine).calibration_id not in set(smoke.column(0).to_pylist())
    shipped = (workdir / "data" / "calibration.yaml").read_text()

    mine.write_text(shipped.replace(NIC_EFFICIENCY, NIC_EFFICIENCY + "0.75 #"))
    dry = run_snakemake(workdir, "--dry-run")

    assert dry.returncode == 0, dry.stderr[-3000:]
    rerun = [("all", ""), ("dataset", ""), ("simulate_study", "study=other")]
    rerun += [("study_configurations", "study=other"), ("study_fits", "study=other")]
    rerun += [("study_points", "study=other"), ("study_figure", "study=other, figure=scaling")]
    assert plan(dry.stdout + dry.stderr) == sorted(rerun)
