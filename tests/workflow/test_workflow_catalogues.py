"""Catalogues are inputs: editing one catalogue file reruns exactly the jobs whose rules read it.

Every rule declares, as named inputs, the catalogue files (data/hardware.yaml, models.yaml,
frameworks.yaml, nccl.yaml) and the calibration its script reads, and the script passes what it
loaded from them down to the library, which reads no catalogue on its own (rules/common.smk,
``catalogue_inputs``). So Snakemake's plan after an edit is the proof: the jobs it reruns because
the file changed ("Updated input files") are exactly the readers, the others rerun only because an
upstream job does, and a rule that does not read the file is not planned at all. Snakemake gives
a job that an upstream job already reruns only that reason (the study's results after its
configurations, the per-study fits after the results, the figure after the fits, the dataset), so
those rules are also dry-run on their own (``--allowed-rules`` with their outputs as targets: the
files upstream of them are then finished files) to show whether the file itself reruns them.

The run is the finished smoke run (one study, no figure or table) with the sample runs of
data/runs ingested, so that every rule of the default target but the figures and tables (being
replaced by one wildcard rule each) has a job. Every file is edited at once, by one value each
(Snakemake also compares an input's content: a file touched with its bytes unchanged reruns
nothing), in one copy of that run, and the dry runs are done once: Snakemake names every updated
input file a job reads ("Updated input files: a, b"), so which file reruns which job reads off
the one plan, file by file. A last test edits one file alone, to show that a rule which does not
read it is not planned at all.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[2]
RUNS = tuple(sorted(p.parent.name for p in (REPO / "data" / "runs").glob("*/run.yaml")))

#: Jobs of the finished run, by what they read.
STUDY = [("study_configurations", "study=smoke")]
REPORTS = [
    ("study_fits", "study=smoke"),
    ("study_figure", "study=smoke, figure=scaling"),
    ("study_points", "study=smoke"),
]
NORMALISE = [("published_measurements", "")]
PREDICT = [("published_validation", "")]
INGEST = [("ingest_run", f"run={run}") for run in RUNS]
#: What reruns when the study's configurations do (the simulate jobs are planned only once the
#: checkpoint study_configurations has counted them).
DOWNSTREAM_OF_STUDY = [("simulate_study", "study=smoke"), *REPORTS, ("dataset", ""), ("all", "")]
#: The rules with jobs upstream of them, dry-run on their own (no rule of a group depends on
#: another of it), with their targets: then each job reruns for its own inputs only.
ON_THEIR_OWN = (
    (("simulate_study",), ("results/sim/smoke.parquet",)),
    (("study_fits", "dataset"), ("reports/studies/smoke/fits.csv", "results/dataset")),
    (("study_figure",), ("reports/studies/smoke/scaling.png",)),
    (("study_points",), ("reports/studies/smoke/points.csv",)),
)

#: file -> (one value edited: old text, new text, after the line starting with this anchor;
#: the jobs whose rules read the file).
EDITS = {
    "hardware.yaml": (
        ("hbm_gbytes_per_s: 3350.0", "hbm_gbytes_per_s: 3400.0", "  h100-sxm-80gb:"),
        [*STUDY, *REPORTS, *NORMALISE, *PREDICT, *INGEST],
    ),
    "models.yaml": (
        ("vocab: 32000", "vocab: 32001", "  llama2-13b:"),
        [*STUDY, *REPORTS, *NORMALISE, *PREDICT, *INGEST],
    ),
    "frameworks.yaml": (
        ("host_overhead_per_layer_s: 1.5e-04", "host_overhead_per_layer_s: 1.6e-04", "  pytorch:"),
        [*STUDY, *NORMALISE, *PREDICT],
    ),
    "nccl.yaml": (
        ("tree_bandwidth_factor: 0.92", "tree_bandwidth_factor: 0.9", ""),
        [*STUDY, *PREDICT],
    ),
    # A calibration's values are hashed into its calibration_id: a comment changes the file's
    # time as an edit does, and keeps the file loadable.
    # study_points reads it for the power terms of a study's bill: block.
    "calibration.yaml": (
        ("", "# edited\n", ""), [*STUDY, *PREDICT, ("study_points", "study=smoke")]
    ),
    # A catalogue's JSON Schema is an input of the rules that read the catalogue
    # (catalogue_inputs): editing its description reruns them as editing the catalogue does.
    "../workflow/schemas/nccl.schema.yaml": (
        ("Checked when the catalogue is loaded.", "Checked on load.", "description:"),
        [*STUDY, *PREDICT],
    ),
    "../workflow/schemas/frameworks.schema.yaml": (
        ("$schema", "# edited\n$schema", ""),
        [*STUDY, *NORMALISE, *PREDICT],
    ),
}  # fmt: skip

_REASON = re.compile(r"^    reason: (.*)$", re.MULTILINE)
_JOB = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):\n((?:    .*\n?)*)", re.MULTILINE)


def _jobs_with_reasons(output: str) -> dict[tuple[str, str], dict[str, str]]:
    """``(rule, wildcards) -> {reason: files}`` of every job a dry run printed, e.g.
    ``{"Updated input files": "/…/data/nccl.yaml"}``."""
    jobs = {}
    for match in _JOB.finditer(output):
        wildcards = re.search(r"^    wildcards: (.*)$", match[2], re.MULTILINE)
        reason = _REASON.search(match[2])
        parts = [part.partition(": ") for part in (reason[1] if reason else "").split("; ")]
        jobs[(match[1], wildcards.group(1) if wildcards else "")] = {
            why: files for why, _, files in parts
        }
    return jobs


@pytest.fixture(scope="module")
def finished_with_runs(
    smoke_run: Path, tmp_path_factory: pytest.TempPathFactory, copy_finished, run_snakemake, plan
) -> Path:
    """The finished smoke run with the sample runs of data/runs ingested too."""
    workdir = copy_finished(smoke_run, tmp_path_factory.mktemp("catalogues") / "run")
    shutil.copytree(REPO / "data" / "runs", workdir / "data" / "runs")
    done = run_snakemake(workdir, "--cores", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert plan(done.stdout + done.stderr) == sorted([*INGEST, ("dataset", ""), ("all", "")])
    return workdir


def _edit(workdir: Path, name: str, old: str, new: str, after: str) -> Path:
    """Change one value of the catalogue file ``name`` (relative to the run's data/): the first
    ``old`` after the line ``after`` becomes ``new``; return the file's path."""
    path = (workdir / "data" / name).resolve()
    text = path.read_text()
    start = text.index(after)
    assert old in text[start:], f"{old!r} not in {name}"
    path.write_text(text[:start] + text[start:].replace(old, new, 1))
    return path


@pytest.fixture
def edit(finished_with_runs: Path) -> Iterator:
    """``edit(name, old, new, after)``: change one catalogue file of the run (``name`` relative
    to its data/, :func:`_edit`); put back after, with its old modification time."""
    saved: list[tuple[Path, bytes, os.stat_result]] = []

    def change(name: str, old: str, new: str, after: str) -> Path:
        path = (finished_with_runs / "data" / name).resolve()
        saved.append((path, path.read_bytes(), path.stat()))
        return _edit(finished_with_runs, name, old, new, after)

    yield change
    for path, content, stat in saved:
        path.write_bytes(content)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@dataclass(frozen=True)
class EditedPlans:
    """The dry runs of the finished run with every file of :data:`EDITS` edited."""

    #: file name of EDITS -> its edited path
    paths: dict[str, Path]
    #: the dry run of the default target: ``(rule, wildcards) -> {reason: files}``
    jobs: dict[tuple[str, str], dict[str, str]]
    #: the dry runs of :data:`ON_THEIR_OWN`, in its order
    alone: list[dict[tuple[str, str], dict[str, str]]]

    def updated(self) -> dict[tuple[str, str], set[str]]:
        """Job -> the edited files it reruns for ("Updated input files"), over every plan."""
        found: dict[tuple[str, str], set[str]] = {}
        for plan in (self.jobs, *self.alone):
            for job, reasons in plan.items():
                if "Updated input files" in reasons:
                    files = set(reasons["Updated input files"].split(", "))
                    found.setdefault(job, set()).update(files)
        return found


@pytest.fixture(scope="module")
def edited_plans(
    finished_with_runs: Path,
    tmp_path_factory: pytest.TempPathFactory,
    copy_finished,
    run_snakemake,
) -> EditedPlans:
    """A copy of the finished run with every file of :data:`EDITS` edited, and its dry runs: the
    default target and each group of :data:`ON_THEIR_OWN` (five Snakemake starts in all, side by
    side: they read the run and write nothing but their logs)."""
    workdir = copy_finished(finished_with_runs, tmp_path_factory.mktemp("edited") / "run")
    paths = {name: _edit(workdir, name, *EDITS[name][0]) for name in EDITS}
    commands = [("--dry-run",)] + [
        ("--dry-run", *targets, "--allowed-rules", *rules) for rules, targets in ON_THEIR_OWN
    ]
    with ThreadPoolExecutor(len(commands)) as pool:
        runs = list(pool.map(lambda args: run_snakemake(workdir, *args), commands))
    for run in runs:
        assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    done, *groups = [_jobs_with_reasons(run.stdout + run.stderr) for run in runs]
    return EditedPlans(paths, done, groups)


def test_the_finished_run_is_complete(finished_with_runs: Path, run_snakemake) -> None:
    done = run_snakemake(finished_with_runs, "--dry-run")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Nothing to be done" in done.stdout + done.stderr


def test_the_edits_rerun_the_readers_and_what_is_downstream_of_them_only(
    edited_plans: EditedPlans,
) -> None:
    readers = {job for _, jobs in EDITS.values() for job in jobs}
    assert set(edited_plans.jobs) == readers | set(DOWNSTREAM_OF_STUDY)
    for (rules, _), plan in zip(ON_THEIR_OWN, edited_plans.alone, strict=True):
        assert {rule for rule, _ in plan} <= set(rules)
    edited = {str(path) for path in edited_plans.paths.values()}
    for plan in (edited_plans.jobs, *edited_plans.alone):
        for job, reasons in plan.items():
            # rerun because they read a file, or only because a job upstream of them reruns
            assert set(reasons) <= {"Updated input files", "Input files updated by another job"}
            updated = reasons.get("Updated input files")
            assert updated is None or set(updated.split(", ")) <= edited, (job, reasons)


@pytest.mark.parametrize("name", list(EDITS))
def test_editing_a_catalogue_reruns_exactly_the_jobs_that_read_it(
    name: str, edited_plans: EditedPlans
) -> None:
    _, readers = EDITS[name]
    path = str(edited_plans.paths[name])
    direct = {job for job, files in edited_plans.updated().items() if path in files}
    assert direct == set(readers), f"jobs rerun for {name} itself"


def test_a_rule_that_does_not_read_the_file_is_not_planned(
    finished_with_runs: Path, edit, run_snakemake, plan
) -> None:
    """NCCL's constants are read by what simulates, not by the normalisation of the published
    measurements nor by the ingestion of a run."""
    edit("nccl.yaml", "tree_bandwidth_factor: 0.92", "tree_bandwidth_factor: 0.9", "")

    done = run_snakemake(finished_with_runs, "--dry-run")

    assert done.returncode == 0, done.stderr[-3000:]
    rules = {rule for rule, _ in plan(done.stdout + done.stderr)}
    assert "study_configurations" in rules and "published_validation" in rules
    assert "published_measurements" not in rules
    assert "ingest_run" not in rules


def test_a_bad_catalogue_value_stops_the_run_naming_file_line_key_and_allowed_values(
    workflow_copy, run_snakemake
) -> None:
    workdir = workflow_copy("bad_catalogue")
    path = workdir / "data" / "hardware.yaml"
    text = path.read_text()
    path.write_text(text.replace("fabric: slingshot", "fabric: myrinet", 1))
    line = next(
        i for i, row in enumerate(path.read_text().splitlines(), 1) if "fabric: myrinet" in row
    )

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert (
        f"invalid catalogue: {path}:{line}: key 'systems.hpe-cray-ex-gh200.fabric': 'myrinet' "
        "is not allowed; allowed: infiniband, roce, efa, ethernet, slingshot"
    ) in output, output[-2000:]
    assert not (workdir / "results").exists()
