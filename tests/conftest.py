"""Shared fixtures: a runnable copy of the workflow and a way to run Snakemake in it.

It stays one file of about 500 lines because pytest finds fixtures and hooks used across the
test packages only in a conftest.py; the helpers without fixtures live beside it
(tests/scheduling.py, tests/library.py, tests/report_setup.py, tests/data/regenerate.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest
import yaml
from hypothesis import settings
from pandas.api import types

from tests.data.regenerate import COMMAND as GOLDEN_COMMAND
from tests.data.regenerate import MANIFEST
from tests.data.regenerate import path_of as golden_path
from tests.report_setup import (
    BROWSER,
    REPORT_LEAVES_OUT,
    REPORT_ROWS_PER_JOB,
    ReportRun,
    published_without,
)
from tests.scheduling import rank, suffix_group, workers, xdist_groups
from trainscale.published.measurements import PublishedData, load_published
from trainscale.schema import Column, names
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import Catalogue, load_catalogue

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


#: How a frame's column passes for each dtype of trainscale.schema (nullable types included).
_DTYPE_CHECKS = {
    "int64": types.is_integer_dtype,
    "float64": types.is_float_dtype,
    "bool": types.is_bool_dtype,
    "string": types.is_string_dtype,
    "timestamp": types.is_datetime64_dtype,
}


def _assert_columns(
    table: pd.DataFrame, columns: tuple[Column, ...], *, leading: Sequence[str] = ()
) -> None:
    """``table`` has ``leading`` then exactly ``columns``, in order, each of its schema dtype."""
    assert list(table.columns) == [*leading, *names(columns)]
    for column in columns:
        assert _DTYPE_CHECKS[column.dtype](table[column.name]), (column.name, column.dtype)


@pytest.fixture(scope="session")
def assert_columns() -> Callable[..., None]:
    """``assert_columns(table, columns, leading=())``: the table has the ``leading`` columns,
    then exactly ``columns`` (a table of :mod:`trainscale.schema`), in order and of their
    dtype."""
    return _assert_columns


# The library takes its catalogues, calibration and published measurements from its caller; the
# tests are such callers and pass the shipped ones, loaded once per session.


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    """The shipped catalogues (data/hardware.yaml, models.yaml, frameworks.yaml, nccl.yaml)."""
    return load_catalogue()


@pytest.fixture(scope="session")
def shipped_calibration() -> Calibration:
    """The shipped calibration (data/calibration.yaml)."""
    return load_calibration()


@pytest.fixture(scope="session")
def published(catalogue: Catalogue) -> PublishedData:
    """The shipped published measurements, normalised with the shipped catalogues."""
    return load_published(
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys
    )


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


def snakemake(
    workdir: Path, *args: str, timeout: float = 300, cluster: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m snakemake *args`` in ``workdir``; return the finished process.

    The workflow's catalogues are those of the copy (TRAINSCALE_DATA is cleared) and no user
    profile applies (SNAKEMAKE_PROFILE is cleared); profiles/default of the copy does.
    ``cluster``: with this machine's SLURM configuration (:func:`cluster_env`), for a run
    through SLURM; else SLURM_CONF stays /dev/null.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINSCALE_DATA", "SNAKEMAKE_PROFILE")}
    command = [sys.executable, "-m", "snakemake", *args]
    return run_process(
        command, cwd=workdir, env=cluster_env(env) if cluster else env, timeout=timeout
    )


def run_process(
    command: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with ``env``, capturing its output as text; return the
    finished process (whatever its exit status)."""
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
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


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``trainscale ARGS`` run in this process (:func:`trainscale.cli.main`, in ``cwd`` and with
    the variables ``env`` set if given), its standard output and error captured: the finished
    "process", its return code the exit status the command line would give. What only a
    separate process shows (the entry point, a broken pipe, Python's own warning lines) is
    tested by running one."""
    from trainscale.cli import main

    stdout, stderr, here = io.StringIO(), io.StringIO(), Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with (
            mock.patch.dict(os.environ, env or {}),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            try:
                status = main(list(args))
            except SystemExit as exit_:  # argparse: --help, a usage error
                status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(
        ["trainscale", *args], status, stdout.getvalue(), stderr.getvalue()
    )


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``cli(*args, cwd=None)``: see :func:`run_cli`."""
    return run_cli


def with_source(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout's ``src`` first on PYTHONPATH, so that a Python subprocess
    imports this code whatever package the environment has installed."""
    path = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path}


# --- Golden results ------------------------------------------------------------------------------
#
# What several tests read and what takes refits of the calibration on the shipped published data
# (held-out predictions, pilot errors, sensitivity scans) is computed once by
# tests/data/regenerate.py and stored under tests/data/golden/, with the calibration id it was
# computed with (tests/data/golden.yaml).


def golden(name: str) -> pd.DataFrame:
    """The golden result ``name`` (tests/data/regenerate.py's GOLDEN); fails the test, naming the
    command that regenerates the files, where they were computed with another calibration than
    the shipped one."""
    manifest = yaml.safe_load(MANIFEST.read_text()) if MANIFEST.exists() else {}
    stored, shipped = manifest.get("calibration_id"), load_calibration().calibration_id
    if stored != shipped or name not in manifest.get("files", {}):
        pytest.fail(
            f"tests/data/golden/{name}.parquet was computed with calibration {stored}, the shipped "
            f"data/calibration.yaml is {shipped} (or the file is missing): rerun "
            f"`{GOLDEN_COMMAND}` and commit tests/data/",
            pytrace=False,
        )
    return pd.read_parquet(golden_path(name))


@pytest.fixture(scope="session")
def held_out() -> pd.DataFrame:
    """The shipped published data predicted source by source, each by a fit that left its source
    out (trainscale.calibrate.fit.held_out_predictions(), one refit per source: the slowest step
    of a calibration), simulated under the shipped catalogues: golden ``held_out``
    (:func:`golden`). A test passes a copy on."""
    return golden("held_out")


@pytest.fixture(scope="session")
def shipped_pilot_errors() -> pd.DataFrame:
    """``pilot_errors(published, catalogue=catalogue, shipped=load_calibration())`` on the shipped
    data (trainscale.calibrate.pilot_series: one base fit per source, then a pilot refit per
    series): golden ``pilot_errors`` (:func:`golden`)."""
    return golden("pilot_errors")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished local run (``--cores 2``) of the smoke study in a copy, once per session; do not
    modify it (:func:`finished_smoke_run` gives a copy to change)."""
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


# --- Parallel runs ----------------------------------------------------------------------------
#
# pytest-xdist workers, two or three; how many, and the grouping that keeps each costly session
# fixture in one worker, is tests/scheduling.py.


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: :func:`~tests.scheduling.workers` for the run's ``-m``, unless
    PYTEST_XDIST_AUTO_NUM_WORKERS sets the count (pytest-xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return workers(config.getoption("markexpr", "") or "")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its ``xdist_group`` (:func:`~tests.scheduling.xdist_groups`), end its
    node id with the group (:func:`~tests.scheduling.suffix_group`) and sort the groups by
    :func:`~tests.scheduling.rank`, stably: within a group, tests keep their collection order."""
    groups = xdist_groups(items)
    grouping = config.getoption("dist", "no") == "loadgroup" or bool(
        getattr(config.option, "loadgroup", False)
    )
    for item in items:
        group = groups[item.nodeid.split("::")[0]]
        item.add_marker(pytest.mark.xdist_group(group))
        if grouping:
            suffix_group(item, group)
    items.sort(key=lambda item: rank(groups[item.nodeid.split("::")[0]])[0])


# --- SLURM --------------------------------------------------------------------------------------
#
# The session runs with SLURM_CONF=/dev/null (:func:`pytest_configure`): on a machine with a SLURM
# configuration but no answering controller every Snakemake start would otherwise wait for it. A
# test marked ``slurm`` gets the machine's configuration back (:func:`_slurm_cluster`), and so do
# the runs through SLURM (:func:`cluster_env`).

#: SLURM_CONF as the session found it (None: unset): the machine's SLURM cluster.
_CLUSTER_SLURM_CONF: list[str | None] = []


#: Where the session's first process keeps the machine's SLURM_CONF ("" for unset) for the
#: pytest-xdist workers it starts: they inherit SLURM_CONF=/dev/null already set.
_SAVED_SLURM_CONF = "TRAINSCALE_TEST_CLUSTER_SLURM_CONF"


def pytest_configure(config: pytest.Config) -> None:
    """Set SLURM_CONF=/dev/null for the session, keeping the value it had for the SLURM tests
    (in an xdist worker, the value the controller found, not the /dev/null it set)."""
    if not _CLUSTER_SLURM_CONF:
        if _SAVED_SLURM_CONF not in os.environ:
            os.environ[_SAVED_SLURM_CONF] = os.environ.get("SLURM_CONF", "")
        _CLUSTER_SLURM_CONF.append(os.environ[_SAVED_SLURM_CONF] or None)
    os.environ["SLURM_CONF"] = "/dev/null"


def cluster_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with the machine's SLURM configuration: SLURM_CONF as
    the session found it, or unset where it was unset."""
    env = dict(os.environ if env is None else env)
    env.pop("SLURM_CONF", None)
    conf = _CLUSTER_SLURM_CONF[0] if _CLUSTER_SLURM_CONF else None
    return env if conf is None else {**env, "SLURM_CONF": conf}


@pytest.fixture(autouse=True)
def _slurm_cluster(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``slurm`` runs with the machine's SLURM configuration."""
    if request.node.get_closest_marker("slurm") is None:
        return
    conf = cluster_env().get("SLURM_CONF")
    if conf is None:
        monkeypatch.delenv("SLURM_CONF", raising=False)
    else:
        monkeypatch.setenv("SLURM_CONF", conf)


@dataclass(frozen=True)
class SlurmRun:
    """The smoke study run through SLURM (:func:`slurm_smoke_run`)."""

    workdir: Path
    dry_run: subprocess.CompletedProcess[str]
    run: subprocess.CompletedProcess[str]
    #: ``scontrol show job`` right after the run: every job the controller knows. It forgets a
    #: finished job MinJobAge (300 s) after its end, which may be before the test runs.
    scontrol: str


def slurm_cluster_problem() -> str | None:
    """Why the SLURM tests cannot run here, or None when a node answers."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: SLURM is not installed (.ci/slurm-up installs and starts it)"
    try:
        answer = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%T"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            env=cluster_env(),
        )
    except subprocess.TimeoutExpired:
        return "sinfo got no answer in 20 s: slurmctld is not responding (.ci/slurm-up)"
    if answer.returncode != 0:
        return f"sinfo failed, the SLURM daemons are not running (.ci/slurm-up): {answer.stderr}"
    states = answer.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return f"no SLURM node is up (states: {states or 'none'}); slurmd is not running"
    return None


#: What the SLURM test builds: the smoke study's results, four jobs (its configurations, a
#: checkpoint, then the two simulate jobs it counts, then their merge), the path of every sweep
#: through the scheduler; the other rules of the default target run each as one such job.
SLURM_TARGETS = ("results/sim/smoke.parquet",)


def _slurm_smoke_run(folder: Path) -> SlurmRun | str:
    """The work of :func:`slurm_smoke_run`: the run, or why SLURM is not available."""
    problem = slurm_cluster_problem()
    if problem:
        return problem
    workdir = copy_workflow(folder / "slurm")
    profiles = [
        "--profile", str(REPO / "profiles/slurm"),
        "--profile", str(REPO / "tests/slurm/profile"),
    ]  # fmt: skip
    dry_run = snakemake(workdir, "--dry-run", *SLURM_TARGETS, cluster=True)
    run = snakemake(workdir, *profiles, *SLURM_TARGETS, timeout=900, cluster=True)
    scontrol = subprocess.run(
        ["scontrol", "show", "job"], capture_output=True, text=True, timeout=60, check=False,
        env=cluster_env(),
    )  # fmt: skip
    return SlurmRun(workdir, dry_run, run, scontrol.stdout + scontrol.stderr)


@pytest.fixture(scope="session")
def slurm_smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SlurmRun:
    """The smoke study's results (:data:`SLURM_TARGETS`) built in a copy through SLURM, with
    the site profile and the test cluster's overrides (``--profile profiles/slurm --profile
    tests/slurm/profile``), after a dry run of it; skips, with the reason, where no SLURM node
    answers. Once per session."""
    result = _slurm_smoke_run(tmp_path_factory.mktemp("slurm_smoke_run"))
    if isinstance(result, str):
        pytest.skip(result)
    return result


def _report_run(folder: Path) -> ReportRun | None:
    """The work of :func:`report_run`; None where the browser test cannot run."""
    if not all(path.exists() for path in BROWSER) or importlib.util.find_spec("selenium") is None:
        return None
    workdir = copy_workflow(folder / "report", studies=None)
    config_path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    subset = Path(config["published"]).with_name("browser-test-measurements.csv")
    published_without(workdir / config["published"], workdir / subset, REPORT_LEAVES_OUT)
    config["published"] = str(subset)
    config["rows_per_job"] = REPORT_ROWS_PER_JOB
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # The config's figures and tables and what they read: the default target less the per-study
    # outputs (reports/studies), which the browser test does not look at and which are 16 of
    # the default target's slowest jobs. The report is built for the same targets.
    targets = [f"reports/figures/{name}.png" for name in config["figures"]]
    targets += [f"reports/tables/{name}.csv" for name in config["tables"]]
    run = snakemake(workdir, "--cores", "2", *targets, timeout=900)
    report = None
    if run.returncode == 0:
        report = snakemake(workdir, "--report", "reports/report.html", *targets)
    return ReportRun(workdir, config, run, report)


@pytest.fixture(scope="session")
def report_run(tmp_path_factory: pytest.TempPathFactory) -> ReportRun:
    """Every figure and table of the repository's config/config.yaml built (``--cores 2``) in a
    copy of the workflow, on the published measurements less :data:`REPORT_LEAVES_OUT` and with
    :data:`REPORT_ROWS_PER_JOB`, then ``snakemake --report reports/report.html`` for them, for
    the browser test; skips, with the reason, where Chromium, chromedriver or selenium is
    missing. Once per session."""
    result = _report_run(tmp_path_factory.mktemp("report_run"))
    if result is None:
        pytest.skip(
            f"{' or '.join(map(str, BROWSER))} or selenium missing (apt-get install chromium "
            "chromium-driver; pip install selenium)"
        )
    return result
