"""Shared fixtures: a runnable copy of the workflow and a way to run Snakemake in it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import settings

# Property tests draw a fixed, reproducible set of examples, so that a run of the suite is
# deterministic; `HYPOTHESIS_PROFILE=explore pytest` draws fresh random examples instead.
settings.register_profile("trainscale", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "trainscale"))

REPO = Path(__file__).resolve().parents[1]

#: What a copy of the workflow needs (data/ holds the catalogues and the published CSV).
WORKFLOW_FILES = ("Snakefile", "rules", "workflow", "config", "profiles", "environment.yml", "data")


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return REPO


def copy_workflow(
    target: Path, *, studies: Sequence[str] | None = ("smoke",), runs: bool = False
) -> Path:
    """Copy the workflow to ``target``; list ``studies`` in its config with no figures or tables.

    ``studies=None`` keeps the repository's config/config.yaml as it is. ``runs=False`` leaves
    out data/runs, so no measured run joins the dataset.
    """
    ignore = shutil.ignore_patterns("__pycache__", *(() if runs else ("runs",)))
    target.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    if studies is not None:
        config_path = target / "config" / "config.yaml"
        config = yaml.safe_load(config_path.read_text())
        config.update(studies=list(studies), figures=[], tables=[])
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


def snakemake(workdir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m snakemake *args`` in ``workdir``; return the finished process.

    The workflow's catalogues are those of the copy (TRAINSCALE_DATA is cleared) and no user
    profile applies (SNAKEMAKE_PROFILE is cleared); profiles/default of the copy does.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINSCALE_DATA", "SNAKEMAKE_PROFILE")}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


_JOB = re.compile(
    r"^(?:local)?(?:rule|checkpoint) (?P<rule>\w+):\n(?P<body>(?:    .*\n?)*)", re.MULTILINE
)


def planned_jobs(output: str) -> list[tuple[str, str]]:
    """``(rule, wildcards)`` of every job a Snakemake run or dry run printed, sorted."""
    jobs = []
    for match in _JOB.finditer(output):
        wildcards = re.search(r"^    wildcards: (.*)$", match["body"], re.MULTILINE)
        jobs.append((match["rule"], wildcards.group(1) if wildcards else ""))
    return sorted(jobs)


@pytest.fixture(scope="session")
def plan() -> Callable[[str], list[tuple[str, str]]]:
    """``plan(output)``: see :func:`planned_jobs`."""
    return planned_jobs


@pytest.fixture(scope="session")
def run_snakemake() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_snakemake(workdir, *args)``: see :func:`snakemake`."""
    return snakemake


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``workflow_copy(name="a", studies=("smoke",))`` -> a fresh copy under tmp_path."""

    def make(name: str = "workflow", **kwargs: object) -> Path:
        return copy_workflow(tmp_path / name, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture(scope="session")
def held_out() -> pd.DataFrame:
    """The shipped published data predicted source by source, each by a fit that left its source
    out (trainscale.calibrate.fit.held_out_predictions(), one refit per source: the slowest step
    of a calibration). Computed once for the tests that refit the calibration and measure the
    interval coverage; a test passes a copy on."""
    from trainscale.calibrate.fit import held_out_predictions

    return held_out_predictions()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished local run (``--cores 2``) of the smoke study in a copy; do not modify it."""
    workdir = copy_workflow(tmp_path_factory.mktemp("smoke_run"))
    done = snakemake(workdir, "--cores", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


def copy_finished_run(source: Path, target: Path) -> Path:
    """Copy the finished run in ``source`` to ``target``, which Snakemake sees as the same
    finished run without running it again; return ``target``.

    The copy keeps the workflow, the outputs, every file's modification time (Snakemake compares
    those of inputs and outputs) and Snakemake's records in .snakemake/metadata, where the
    catalogues, inputs located from the workflow's folder (rules/common.smk), are absolute paths:
    those are moved to the copy's folder, as a run there would have recorded them. Snakemake's
    record format is its own: tests using a copy also check that Snakemake plans none of the
    finished jobs that their change leaves alone, so a copy seen as unfinished fails them.
    """
    old_root = json.dumps(str(source))[1:-1]
    workdir = Path(shutil.copytree(source, target, symlinks=True))
    new_root = json.dumps(str(workdir))[1:-1]
    for record in (workdir / ".snakemake" / "metadata").iterdir():
        text = record.read_text()
        if old_root in text:
            record.write_text(text.replace(old_root, new_root))
    return workdir


@pytest.fixture(scope="session")
def copy_finished() -> Callable[[Path, Path], Path]:
    """``copy_finished(source, target)``: see :func:`copy_finished_run`."""
    return copy_finished_run


@pytest.fixture
def finished_smoke_run(smoke_run: Path, tmp_path: Path) -> Callable[[str], Path]:
    """Factory: ``finished_smoke_run(name)`` -> a copy of :func:`smoke_run` under tmp_path, to
    change as a test likes, which Snakemake sees as the same finished run without running it again
    (:func:`copy_finished_run`)."""

    def make(name: str = "finished") -> Path:
        return copy_finished_run(smoke_run, tmp_path / name)

    return make
