"""One executed workflow shared by the tests that only read its outputs: three studies of a
user's own (:mod:`tests.workflow._user_studies`) run in one copy with one Snakemake start."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import copy_workflow, snakemake
from tests.workflow import _user_studies


@dataclass(frozen=True)
class StudiesRun:
    """The copy the three studies ran in and the finished Snakemake process."""

    workdir: Path
    done: subprocess.CompletedProcess[str]

    def check(self) -> Path:
        """The workdir; fails the test with Snakemake's output when the run failed."""
        assert self.done.returncode == 0, (self.done.stdout + self.done.stderr)[-3000:]
        return self.workdir


@pytest.fixture(scope="session")
def user_studies_run(tmp_path_factory: pytest.TempPathFactory) -> StudiesRun:
    """The studies of :mod:`tests.workflow._user_studies` (a new study's figure and fits, a study
    whose winning plan switches, a study calibrated on its own pilots) written into one copy of
    the workflow with the sample runs, and their targets built (``--cores 2``) by one Snakemake
    run, once per session; do not modify it."""
    workdir = copy_workflow(
        tmp_path_factory.mktemp("user_studies") / "run", studies=_user_studies.NAMES, runs=True
    )
    _user_studies.write(workdir)
    done = snakemake(workdir, "--cores", "2", *_user_studies.TARGETS, timeout=1200)
    return StudiesRun(workdir, done)
