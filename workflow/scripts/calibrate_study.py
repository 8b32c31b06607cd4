"""Rule calibrate_study: a study's calibration from its calibration: {measurements: [...]}, as
trainscale calibrate --measurements PATH ... -o OUT does (run folders ingested on the fly), with
the catalogue files, published measurements and shipped calibration the rule declares."""

import sys

from trainscale.calibrate.user import calibrate_user
from trainscale.commands.calibrate import error_table
from trainscale.errors import TrainscaleError
from trainscale.ingest.runs import ingest_run
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

console = sys.stderr
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)


def report(message):
    """To the job's log and to Snakemake's console (a warning or an error must be seen)."""
    print(message, file=sys.stderr)
    print(message, file=console, flush=True)


try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    published = load_published(
        snakemake.input.csv, hardware=catalogue.hardware, models=catalogue.models
    )
    result = calibrate_user(
        snakemake.params.paths,
        snakemake.output.calibration,
        base=load_calibration(snakemake.input.calibration),
        published=published,
        catalogue=catalogue,
        ingest=lambda run_dir: ingest_run(
            run_dir, hardware=catalogue.hardware, models=catalogue.models
        )[0],
    )
except TrainscaleError as error:
    report(f"error: {error}")
    sys.exit(1)

# the measured rows as calibrated (configuration columns + measured_tokens_per_s_per_gpu), for
# the study's scaling figure to draw over its prediction
result.measurements.table.reset_index(drop=True).to_parquet(snakemake.output.pilots, index=False)
for line in result.measurements.warnings:
    report(f"warning: {line}")
for bound in result.on_bounds:
    report(f"warning: refitted parameter {bound} sits on its bound")
print(
    f"calibration_id {result.calibration.calibration_id}: refitted "
    f"{', '.join(result.refitted)} on {len(result.rows)} rows of "
    f"{', '.join(map(str, result.measurements.files))}",
    file=sys.stderr,
)
print(error_table(result.report), file=sys.stderr)
