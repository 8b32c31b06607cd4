"""Figures and tables: one wildcard rule each (rules figure and table), whose inputs are what
the registries say each output reads, so editing a catalogue reruns exactly what reads it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.workflow

TABLES = ("reports/tables/hardware.csv", "reports/tables/models.csv")


def test_an_output_is_one_job_of_its_kinds_rule(workflow_copy, run_snakemake, plan) -> None:
    workdir = workflow_copy()

    done = run_snakemake(workdir, "--dry-run", *TABLES, "reports/figures/collective_scaling.png")

    assert done.returncode == 0, done.stderr[-3000:]
    assert plan(done.stdout + done.stderr) == [
        ("collective_curves", ""),
        ("figure", "name=collective_scaling"),
        ("table", "name=hardware"),
        ("table", "name=models"),
    ]


def test_each_table_has_its_caption_and_editing_a_catalogue_reruns_what_reads_it(
    workflow_copy, run_snakemake, plan
) -> None:
    workdir = workflow_copy()
    first = run_snakemake(workdir, "--cores", "2", *TABLES)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (workdir / "reports/tables/models.md").is_file()
    report = run_snakemake(workdir, "--report", "report.html", *TABLES)
    assert report.returncode == 0, report.stderr[-3000:]
    html = (workdir / "report.html").read_text()
    for name in ("hardware", "models"):  # each output's own caption, not the template
        caption = (workdir / "workflow/report/tables" / f"{name}.rst").read_text()
        assert " ".join(caption.split()[:4]) in html, name
    assert "snakemake.params" not in html

    models = workdir / "data" / "models.yaml"
    models.write_text(models.read_text() + "\n# edited\n")
    edited = run_snakemake(workdir, "--dry-run", *TABLES)
    forced = run_snakemake(workdir, "--dry-run", *TABLES, "--forcerun", TABLES[0])

    assert edited.returncode == 0, edited.stderr[-3000:]
    assert plan(edited.stdout + edited.stderr) == [("table", "name=models")]
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert plan(forced.stdout + forced.stderr) == [
        ("table", "name=hardware"),
        ("table", "name=models"),
    ]
