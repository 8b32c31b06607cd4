"""Shared fixtures: a runnable copy of the workflow and a way to run Snakemake in it."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hypothesis import settings
from pandas.api import types

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
    return load_published(hardware=catalogue.hardware, models=catalogue.models)


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
    workdir: Path, *args: str, timeout: float = 300, background: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m snakemake *args`` in ``workdir``; return the finished process.

    The workflow's catalogues are those of the copy (TRAINSCALE_DATA is cleared) and no user
    profile applies (SNAKEMAKE_PROFILE is cleared); profiles/default of the copy does.
    ``background``: see :func:`run_process`.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINSCALE_DATA", "SNAKEMAKE_PROFILE")}
    command = [sys.executable, "-m", "snakemake", *args]
    return run_process(command, cwd=workdir, env=env, timeout=timeout, background=background)


def run_process(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    background: bool = False,
    one_at_a_time: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with ``env``, capturing its output as text; return the
    finished process (whatever its exit status).

    ``background=True`` (the background work below): at a lower priority (nice 10), so that the
    test running meanwhile keeps its core, in a process group of its own, which the end of the
    session stops if it still runs. ``one_at_a_time=True`` as well: after the other such
    process, if one runs, not beside it; for work that keeps a core or two busy throughout (a
    harness launch, a refit), which, all started at collection, would share the idle core and
    take more of the running test's (``timeout`` counts from the process's start).
    """
    if not background:
        return subprocess.run(
            command,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    with _ONE_AT_A_TIME if one_at_a_time else contextlib.nullcontext():
        with _RUNNING_LOCK:
            if _STOPPING.is_set():
                raise RuntimeError("the test session ended before this background run started")
            process = subprocess.Popen(
                ["nice", "-n", "10", *command],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            _RUNNING.add(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            process.communicate()
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


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


def with_source(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout's ``src`` first on PYTHONPATH, so that a Python subprocess
    imports this code whatever package the environment has installed."""
    path = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path}


_SHIPPED: list[tuple[Catalogue, PublishedData]] = []
_SHIPPED_LOCK = threading.Lock()


def shipped_inputs() -> tuple[Catalogue, PublishedData]:
    """The shipped catalogues and published measurements, loaded as the fixtures catalogue and
    published load them, once, for the background work (objects of its own, which no test
    sees)."""
    with _SHIPPED_LOCK:
        if not _SHIPPED:
            catalogue = load_catalogue()
            published = load_published(hardware=catalogue.hardware, models=catalogue.models)
            _SHIPPED.append((catalogue, published))
        return _SHIPPED[0]


#: What a :func:`call_in_background` subprocess runs: argv[1] holds the pickled module and
#: function names, arguments and keyword arguments; argv[2] receives the pickled result.
_CALL_SCRIPT = """\
import importlib, pickle, sys

with open(sys.argv[1], "rb") as file:
    module, name, args, kwargs = pickle.load(file)
result = getattr(importlib.import_module(module), name)(*args, **kwargs)
with open(sys.argv[2], "wb") as file:
    pickle.dump(result, file)
"""


@dataclass(frozen=True)
class Call:
    """A function called in a subprocess (:func:`call_in_background`)."""

    process: subprocess.CompletedProcess[str]
    output: Path

    def result(self) -> Any:
        """What the function returned; fails the test with its traceback if it raised."""
        assert self.process.returncode == 0, self.process.stderr[-5000:]
        with self.output.open("rb") as file:
            return pickle.load(file)


def call_in_background(folder: Path, function: str, *args: Any, **kwargs: Any) -> Call:
    """Call ``function(*args, **kwargs)``, ``function`` named ``"module:name"``, in a Python
    subprocess of the background work (:func:`run_process`) that imports this checkout's code;
    pickle carries the arguments there and the result back exactly (every dtype and value).
    The function is named, not passed: the subprocess imports it as it is in the module, which a
    test that replaces it meanwhile in this process (monkeypatch) does not change. Its files go
    to ``folder``."""
    module, name = function.split(":")
    arguments, output = folder / f"{name}.args.pickle", folder / f"{name}.pickle"
    arguments.write_bytes(pickle.dumps((module, name, args, kwargs)))
    command = [sys.executable, "-c", _CALL_SCRIPT, str(arguments), str(output)]
    env = with_source(dict(os.environ))
    done = run_process(command, cwd=REPO, env=env, timeout=900, background=True, one_at_a_time=True)
    return Call(done, output)


def _held_out(folder: Path) -> Call:
    """Background work of :func:`held_out`."""
    catalogue, published = shipped_inputs()
    held_out_predictions = "trainscale.calibrate.fit:held_out_predictions"
    return call_in_background(folder, held_out_predictions, published, catalogue=catalogue)


@pytest.fixture(scope="session")
def held_out(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The shipped published data predicted source by source, each by a fit that left its source
    out (trainscale.calibrate.fit.held_out_predictions(), one refit per source: the slowest step
    of a calibration), simulated under the shipped catalogues: those of the fixtures published
    and catalogue. Computed once for the tests that refit the calibration and measure the
    interval coverage; a test passes a copy on. Started in the background, in a subprocess
    (:func:`background_result`, :func:`call_in_background`)."""
    return background_result("held_out", tmp_path_factory).result()


def _smoke_run(folder: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Background work of :func:`smoke_run`."""
    workdir = copy_workflow(folder)
    return workdir, snakemake(workdir, "--cores", "2", background=True)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished local run (``--cores 2``) of the smoke study in a copy; do not modify it.
    Started in the background (:func:`background_result`)."""
    workdir, done = background_result("smoke_run", tmp_path_factory)
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


# --- Background work ---------------------------------------------------------------------------
#
# The tests run one at a time, most of them in this process, on one of the machine's two cores. The
# slowest fixtures run subprocesses: Snakemake runs, the harness's launches
# (tests/bench/conftest.py) and refits of the calibration (:func:`held_out`,
# tests/calibrate/conftest.py); a conftest below this one registers its fixtures' work with
# :func:`register_background`. Each one in _BACKGROUND is started in a thread as soon as the tests
# are collected, when a collected test uses its fixture, so that it runs on the core the tests
# before that one leave idle (at nice 10: the running test keeps its core); the test files that use
# such a fixture run last, those waiting for the longest work after the others
# (:func:`pytest_collection_modifyitems`), so that the work has the other files' time. Its fixture
# then waits for it (:func:`background_result`) and checks its outcome as when it runs the work
# itself. The work and every check are the same either way, only its start is earlier.
# TRAINSCALE_TEST_BACKGROUND=0 starts nothing early and keeps the files' order: each fixture runs
# its work when a test first needs it.


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
        )
    except subprocess.TimeoutExpired:
        return "sinfo got no answer in 20 s: slurmctld is not responding (.ci/slurm-up)"
    if answer.returncode != 0:
        return f"sinfo failed, the SLURM daemons are not running (.ci/slurm-up): {answer.stderr}"
    states = answer.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return f"no SLURM node is up (states: {states or 'none'}); slurmd is not running"
    return None


def _slurm_smoke_run(folder: Path) -> SlurmRun | str:
    """Background work of :func:`slurm_smoke_run`: the run, or why SLURM is not available."""
    problem = slurm_cluster_problem()
    if problem:
        return problem
    workdir = copy_workflow(folder / "slurm")
    profiles = [
        "--profile", str(REPO / "profiles/slurm"),
        "--profile", str(REPO / "tests/slurm/profile"),
    ]  # fmt: skip
    dry_run = snakemake(workdir, "--dry-run", background=True)
    run = snakemake(workdir, *profiles, timeout=900, background=True)
    scontrol = subprocess.run(
        ["scontrol", "show", "job"], capture_output=True, text=True, timeout=60, check=False
    )
    return SlurmRun(workdir, dry_run, run, scontrol.stdout + scontrol.stderr)


@pytest.fixture(scope="session")
def slurm_smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SlurmRun:
    """The smoke study run in a copy through SLURM, with the site profile and the test
    cluster's overrides (``--profile profiles/slurm --profile tests/slurm/profile``), after a
    dry run of it; skips, with the reason, where no SLURM node answers. Started in the
    background (:func:`background_result`)."""
    result = background_result("slurm_smoke_run", tmp_path_factory)
    if isinstance(result, str):
        pytest.skip(result)
    return result


#: The browser test's Chromium and chromedriver (Debian's packages chromium, chromium-driver).
BROWSER = (Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver"))


@dataclass(frozen=True)
class ReportRun:
    """Every figure and table of the repository's config and the report (:func:`report_run`)."""

    workdir: Path
    config: dict[str, Any]
    run: subprocess.CompletedProcess[str]
    report: subprocess.CompletedProcess[str] | None


def _report_run(folder: Path) -> ReportRun | None:
    """Background work of :func:`report_run`; None where the browser test cannot run."""
    if not all(path.exists() for path in BROWSER) or importlib.util.find_spec("selenium") is None:
        return None
    workdir = copy_workflow(folder / "report", studies=None)
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    # The config's figures and tables and what they read: the default target less the per-study
    # outputs (reports/studies), which the browser test does not look at and which are 16 of
    # the default target's slowest jobs. The report is built for the same targets.
    targets = [f"reports/figures/{name}.png" for name in config["figures"]]
    targets += [f"reports/tables/{name}.csv" for name in config["tables"]]
    run = snakemake(workdir, "--cores", "2", *targets, timeout=900, background=True)
    report = None
    if run.returncode == 0:
        report = snakemake(workdir, "--report", "reports/report.html", *targets, background=True)
    return ReportRun(workdir, config, run, report)


@pytest.fixture(scope="session")
def report_run(tmp_path_factory: pytest.TempPathFactory) -> ReportRun:
    """Every figure and table of the repository's config/config.yaml built (``--cores 2``) in a
    copy of the workflow, then ``snakemake --report reports/report.html`` for them, for the
    browser test; skips, with the reason, where Chromium, chromedriver or selenium is missing.
    Started in the background (:func:`background_result`)."""
    result = background_result("report_run", tmp_path_factory)
    if result is None:
        pytest.skip(
            f"{' or '.join(map(str, BROWSER))} or selenium missing (apt-get install chromium "
            "chromium-driver; pip install selenium)"
        )
    return result


#: fixture name -> its work, ``work(folder)``: what the fixture waits for.
_BACKGROUND: dict[str, Callable[[Path], Any]] = {
    "smoke_run": _smoke_run,
    "slurm_smoke_run": _slurm_smoke_run,
    "report_run": _report_run,
    "held_out": _held_out,
}
_STARTED: dict[str, Future[Any]] = {}
_POOL: list[ThreadPoolExecutor] = []
_RUNNING: set[subprocess.Popen[str]] = set()
_RUNNING_LOCK = threading.Lock()
_ONE_AT_A_TIME = threading.Lock()
_STOPPING = threading.Event()


def register_background(name: str, work: Callable[[Path], Any]) -> None:
    """Make ``work(folder)`` the background work of fixture ``name``, defined in a conftest below
    this one, which registers it when it is loaded: before the tests are collected. A conftest
    loaded twice (tests/tables/conftest.py executes the figures' conftest for its fixtures)
    registers the same definition again, which keeps the first."""
    known = _BACKGROUND.setdefault(name, work)
    if known is not work and _definition(known) != _definition(work):
        raise ValueError(f"fixture {name!r} already has background work")


def _definition(function: Callable[..., Any]) -> tuple[str, str]:
    """Where ``function`` is defined: its source file and qualified name."""
    return function.__code__.co_filename, function.__qualname__


def background_result(name: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What the work of fixture ``name`` returned: wait for it if it was started, else run it."""
    future = _STARTED.pop(name, None)
    if future is None:
        return _BACKGROUND[name](tmp_path_factory.mktemp(name))
    return future.result()


def _background_on(config: pytest.Config) -> bool:
    return not config.option.collectonly and os.environ.get("TRAINSCALE_TEST_BACKGROUND") != "0"


#: The background work that takes longest, minutes even alone: every figure and table of the
#: config (the browser test's run) and the runs whose jobs wait in SLURM's queue.
_LONGEST = frozenset({"report_run", "slurm_smoke_run", "slurm_bench_run"})


def _lateness(item: pytest.Item) -> int:
    """0: the test waits for no background work; 1: for some; 2: for some of _LONGEST."""
    names = set(getattr(item, "fixturenames", ()))
    return 2 if names & _LONGEST else 1 if names & _BACKGROUND.keys() else 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the test files that wait for background work last, those that wait for the longest
    after the others, each group in its order, so that the work has the other test files' time
    to finish; the other files keep theirs. Whole files move, so that a module-scoped fixture
    still serves its file's tests in one go."""
    if not _background_on(config):
        return
    lateness: dict[Path, int] = {}
    for item in items:
        lateness[item.path] = max(lateness.get(item.path, 0), _lateness(item))
    items.sort(key=lambda item: lateness[item.path])  # stable: keeps the order within a group


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the work of every fixture in _BACKGROUND that a collected test uses."""
    if not _background_on(session.config):
        return
    used = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    names = [name for name in _BACKGROUND if name in used]
    if not names:
        return
    pool = ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="background")
    _POOL.append(pool)
    factory = session.config._tmp_path_factory  # what the tmp_path_factory fixture returns
    for name in names:
        _STARTED[name] = pool.submit(_BACKGROUND[name], factory.mktemp(name))


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop a background run and its processes (SIGTERM: Snakemake cancels its SLURM jobs)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the background work that no test waited for (the session ended early)."""
    _STOPPING.set()
    for future in _STARTED.values():
        future.cancel()
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for process in running:
        _stop(process)
    for pool in _POOL:
        pool.shutdown(wait=True)
