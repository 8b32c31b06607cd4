"""Start-up of the workflow: the default target resolves, and invalid input stops the run before
any job starts with a message naming the file, the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import copy_workflow
from trainscale.figures import FIGURES
from trainscale.sim.system.hardware import load_hardware
from trainscale.tables import TABLES

pytestmark = pytest.mark.workflow


def test_default_target_dry_run_plans_every_configured_output(
    workflow_copy, run_snakemake, plan
) -> None:
    workdir = workflow_copy(studies=None, runs=True)  # the repository's own config
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert ("all", "") in plan(output)
    targets = [f"results/sim/{study}.parquet" for study in config["studies"]]
    targets += ["results/published.parquet", "results/validation.parquet", "results/dataset"]
    for section, extensions in (
        ("figures", ("pdf", "png", "svg")),
        ("tables", ("csv", "md", "tex")),
    ):
        targets += [f"reports/{section}/{n}.{e}" for n in config[section] for e in extensions]
    missing = [target for target in targets if target not in output]
    assert not missing, f"not planned: {missing}"
    assert not (workdir / "results").exists()


def test_simulate_jobs_follow_the_rows_that_survive_the_filters(
    workflow_copy, run_snakemake, plan
) -> None:
    workdir = workflow_copy()

    def keep_tp1(data: dict) -> None:
        del data["rows_per_job"]  # the config's rows_per_job applies
        data["filters"]["max_model_parallel"] = 1  # 4 of the 12 grid rows survive

    _edit_smoke(workdir, keep_tp1)
    before = run_snakemake(workdir, "--dry-run", "--config", "rows_per_job=1")
    counted = run_snakemake(
        workdir, "--cores", "1", "results/studies/smoke/chunk_counts.json",
        "--config", "rows_per_job=1",
    )  # fmt: skip
    after = run_snakemake(workdir, "--dry-run", "--config", "rows_per_job=1")

    assert before.returncode == 0, before.stderr[-3000:]
    planned = [rule for rule, _ in plan(before.stdout + before.stderr)]
    assert "study_configurations" in planned and "simulate_chunk" not in planned  # checkpoint
    assert counted.returncode == 0, counted.stderr[-3000:]
    warning = "warning: config/studies/smoke.yaml: 8 of 12 grid rows (66.7 %) were removed"
    assert warning in counted.stdout + counted.stderr  # on the console
    log = workdir / "results/logs/study_configurations/smoke.log"
    assert warning in log.read_text()  # and kept in the log
    assert "8 by filter 'max_model_parallel'" in log.read_text()
    assert after.returncode == 0, after.stderr[-3000:]
    chunks = [wc for rule, wc in plan(after.stdout + after.stderr) if rule == "simulate_chunk"]
    assert chunks == [f"study=smoke, chunk={i}" for i in range(4)]  # not 12, one per grid row


def test_a_study_left_with_no_rows_fails_and_writes_no_results(
    workflow_copy, run_snakemake
) -> None:
    workdir = workflow_copy()

    def never_fits(data: dict) -> None:
        data["fixed"].update(model="llama2-70b", sharding="ddp")
        data["filters"]["fits_memory"] = True

    _edit_smoke(workdir, never_fits)
    done = run_snakemake(workdir, "--cores", "2")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "config/studies/smoke.yaml: the study has no rows left" in output
    assert "every one of the 12 grid rows was removed" in output
    assert "by filter 'fits_memory'" in output and "by filter 'max_model_parallel'" in output
    assert not (workdir / "results/sim/smoke.parquet").exists()
    assert not (workdir / "results/dataset").exists()
    assert not (workdir / "results/studies/smoke/configurations").exists()
    assert not list((workdir / "results/studies/smoke").glob(".*tmp"))


def _edit_smoke(workdir: Path, edit) -> Path:
    path = workdir / "config" / "studies" / "smoke.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _unknown_gpu(data: dict) -> None:
    del data["fixed"]["gpu"]
    data["sweep"]["gpu"] = ["h100-sxm-80gb", "h300-sxm-999gb"]


def _negative_count(data: dict) -> None:
    del data["sweep"]["num_gpus"]
    data["fixed"]["num_gpus"] = -8


def _unknown_key(data: dict) -> None:
    data["fixed"]["num_gpu"] = 8


def _infinite_nic(data: dict) -> None:
    data["fixed"]["nic_gbit_per_s_per_gpu"] = float("inf")  # written as .inf


#: id -> (an invalid edit of the smoke study, what the message about it says)
INVALID_STUDIES = {
    "unknown-gpu": (_unknown_gpu, ["key 'sweep.gpu[1]'", "unknown GPU 'h300-sxm-999gb'", "valid:"]),
    "negative-count": (
        _negative_count, ["key 'fixed.num_gpus'", "-8 is less than the minimum of 1"]
    ),
    "unknown-key": (_unknown_key, ["key 'fixed.num_gpu'", "unknown key; allowed:", "num_gpus"]),
    "infinite-nic": (
        _infinite_nic, ["key 'fixed.nic_gbit_per_s_per_gpu'", "inf is not a finite positive number"]
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def invalid_studies(tmp_path_factory: pytest.TempPathFactory, run_snakemake) -> tuple[Path, str]:
    """A copy of the workflow listing one study per :data:`INVALID_STUDIES` (the smoke study
    with that edit, in config/studies/<id>.yaml) and nothing else, and the output of its run
    (``--cores 1``), which names every invalid study: one Snakemake start for all of them."""
    workdir = copy_workflow(tmp_path_factory.mktemp("invalid") / "run", studies=INVALID_STUDIES)
    smoke = (workdir / "config" / "studies" / "smoke.yaml").read_text()
    for name, (edit, _) in INVALID_STUDIES.items():
        data = yaml.safe_load(smoke)
        edit(data)
        (workdir / "config" / "studies" / f"{name}.yaml").write_text(
            yaml.safe_dump(data, sort_keys=False)
        )
    done = run_snakemake(workdir, "--cores", "1")
    assert done.returncode != 0
    return workdir, done.stdout + done.stderr


@pytest.mark.parametrize("name", list(INVALID_STUDIES))
def test_invalid_study_stops_the_run_before_any_job(invalid_studies, name: str) -> None:
    workdir, output = invalid_studies
    path = f"config/studies/{name}.yaml"
    _, expected = INVALID_STUDIES[name]

    assert path in output
    # what the run says about this study: from its name to the next study named, or the end
    said = output[output.index(path) :]
    others = [said.find(f"config/studies/{other}.yaml") for other in INVALID_STUDIES]
    said = said[: min([i for i in others if i > 0], default=len(said))]
    for fragment in expected:
        assert fragment in said, output[-3000:]
    if name == "unknown-gpu":
        assert all(gpu in said for gpu in load_hardware().gpus)
    assert not (workdir / "results").exists(), "a job ran although the studies are invalid"


def test_invalid_config_stops_the_run(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy()
    config_path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["rows_per_job"] = 0
    config_path.write_text(yaml.safe_dump(config))

    done = run_snakemake(workdir, "--cores", "1")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "rows_per_job" in output
    assert "minimum of 1" in output
    assert not (workdir / "results").exists()


def test_missing_study_file_is_named(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy(studies=("smoke", "no_such_study"))

    done = run_snakemake(workdir, "--dry-run")

    assert done.returncode != 0
    assert "config/studies/no_such_study.yaml: cannot read" in done.stdout + done.stderr


def test_a_duplicate_key_in_the_config_stops_the_run(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy()
    config_path = workdir / "config" / "config.yaml"
    lines = config_path.read_text().splitlines()
    lines.append("rows_per_job: 7")  # given twice: Snakemake's own loader keeps the last one
    config_path.write_text("\n".join(lines) + "\n")
    assert sum(line.startswith("rows_per_job:") for line in lines) == 2

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"invalid config: config/config.yaml:{len(lines)}:" in output, output[-2000:]
    assert "duplicate key 'rows_per_job' (first at line" in output
    assert not (workdir / "results").exists()


def test_a_duplicate_key_in_a_study_stops_the_run(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy()
    path = workdir / "config" / "studies" / "smoke.yaml"
    text = path.read_text()
    assert "\nfilters:\n" in text
    path.write_text(text.replace("\nfilters:\n", "\nfilters:\n  fits_memory: true\n", 1)
                    + "filters:\n  fits_memory: false\n")  # fmt: skip

    done = run_snakemake(workdir, "--cores", "1")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "config/studies/smoke.yaml" in output and "duplicate key 'filters'" in output
    assert not (workdir / "results").exists()


def test_every_start_up_problem_is_reported_in_one_run(workflow_copy, run_snakemake) -> None:
    """User trial item 2: unknown names under `figures:` gave a raw MissingInputException, and
    start-up problems came one run at a time. Two invalid studies, an unknown figure and an
    unknown table are now all named by one run."""
    workdir = workflow_copy(studies=("smoke", "other"))
    other = workdir / "config" / "studies" / "other.yaml"
    other.write_text((workdir / "config" / "studies" / "smoke.yaml").read_text())
    _edit_smoke(workdir, _unknown_gpu)
    data = yaml.safe_load(other.read_text())
    data["fixed"]["sharding"] = "fsdp3"
    other.write_text(yaml.safe_dump(data, sort_keys=False))
    config_path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config.update(figures=["fsdp_scaleout", "no_such_figure"], tables=["no_such_table"])
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "MissingInputException" not in output
    figures = "unknown figure(s) 'no_such_figure' under 'figures'; known: " + ", ".join(FIGURES)
    assert figures in output, output[-3000:]
    assert "unknown table(s) 'no_such_table' under 'tables'; known: " + ", ".join(TABLES) in output
    assert "config/studies/smoke.yaml: key 'sweep.gpu[1]': unknown GPU 'h300-sxm-999gb'" in output
    assert "config/studies/other.yaml: key 'fixed.sharding': 'fsdp3' is not allowed" in output
    assert not (workdir / "results").exists()


def test_a_listed_output_whose_study_is_not_listed_is_named(workflow_copy, run_snakemake) -> None:
    workdir = workflow_copy(studies=None)  # the shipped figures and tables
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())

    done = run_snakemake(workdir, "--dry-run", "--config", "studies=[smoke]")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "KeyError" not in output and "Traceback" not in output
    for kind, registry in (("figure", FIGURES), ("table", TABLES)):
        for name in config[f"{kind}s"]:
            for spec in registry[name].inputs.values():
                if spec.file.startswith("sim/"):
                    study = spec.file.removeprefix("sim/")
                    assert f"{kind} '{name}'" in output, name
                    assert f"read(s) the study '{study}'" in output
    assert not (workdir / "results").exists()
