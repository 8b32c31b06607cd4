"""Checkpoint study_configurations: expand one study, block by block, into one configuration
file per simulate job, its rejects table and the chunk counts the workflow plans from, with the
catalogue files and calibration the rule declares as inputs."""

import sys

from trainscale.study.chunks import write_study_configurations
from trainscale.study.load import load_study
from trainscale.study.scale import size_note
from trainscale.workflow import rule_script

with rule_script(snakemake, echo_errors=True) as rule:
    catalogue = rule.catalogue()
    study = load_study(
        snakemake.input.study,
        schema=snakemake.input.schema,
        hardware=catalogue.hardware,
        models=catalogue.models,
    )
    summary, warning = write_study_configurations(
        study,
        directory=snakemake.output.configurations,
        rejects=snakemake.output.rejects,
        counts=snakemake.output.counts,
        rows_per_job=int(snakemake.params.rows_per_job),
        catalogue=catalogue,
        calibration=rule.calibration(),
    )

    print(
        f"{study.path}: {summary.grid_rows} grid rows -> {summary.kept_rows} configurations, "
        f"{summary.dropped_rows} rows dropped (see {snakemake.output.rejects}); "
        f"{summary.kept_rows} rows in chunks of {snakemake.params.rows_per_job}",
        file=sys.stderr,
    )
    for column, rows in summary.dropped.items():
        print(f"  {rows} rows by {column} (e.g. {summary.examples[column]})", file=sys.stderr)
    if warning:
        rule.report(warning)
    note = size_note(study.path, summary.grid_rows, int(snakemake.params.rows_per_job), None,
                     kept_rows=summary.kept_rows)  # fmt: skip
    if note:  # the exact job count, now that the filters have run (time for one core)
        rule.report(note)
