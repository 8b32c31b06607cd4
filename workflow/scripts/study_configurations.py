"""Checkpoint study_configurations: expand one study, block by block, into one configuration
file per simulate job, its rejects table and the chunk counts the workflow plans from, with the
catalogue files and calibration the rule declares as inputs."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue
from trainscale.study.scale import size_note
from trainscale.study.sweep import load_study, write_study_configurations

console = sys.stderr
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)


def report(message):
    """To the job's log and to Snakemake's console (a warning or an error must be seen)."""
    print(message, file=sys.stderr)
    print(message, file=console, flush=True)


try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
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
        calibration=load_calibration(snakemake.input.calibration),
    )
except TrainscaleError as error:
    report(f"error: {error}")
    sys.exit(1)

print(
    f"{study.path}: {summary.grid_rows} grid rows -> {summary.kept_rows} configurations, "
    f"{summary.dropped_rows} rows dropped (see {snakemake.output.rejects}); "
    f"{summary.kept_rows} rows in chunks of {snakemake.params.rows_per_job}",
    file=sys.stderr,
)
for column, rows in summary.dropped.items():
    print(f"  {rows} rows by {column} (e.g. {summary.examples[column]})", file=sys.stderr)
if warning:
    report(warning)
note = size_note(study.path, summary.grid_rows, int(snakemake.params.rows_per_job), None,
                 kept_rows=summary.kept_rows)  # fmt: skip
if note:  # the exact job count, now that the filters have run (time for one core)
    report(note)
