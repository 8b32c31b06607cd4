"""Rule calibrate_study: a study's calibration from its calibration: {measurements: [...]}, as
trainscale calibrate --measurements PATH ... -o OUT does (run folders ingested on the fly), with
the catalogue files, published measurements and shipped calibration the rule declares."""

import sys

from trainscale.calibrate.stored import read_stored
from trainscale.calibrate.user import calibrate_user
from trainscale.commands.calibrate import error_table
from trainscale.ingest.runs import ingest_run
from trainscale.workflow import rule_script

with rule_script(snakemake, echo_errors=True) as rule:
    catalogue = rule.catalogue()
    result = calibrate_user(
        snakemake.params.paths,
        snakemake.output.calibration,
        base=rule.calibration(),
        # read only where the calibration has no stored pilot errors of its own
        published=lambda: rule.published(catalogue),
        catalogue=catalogue,
        stored=read_stored(snakemake.input.calibration),
        ingest=lambda run_dir: ingest_run(
            run_dir, hardware=catalogue.hardware, models=catalogue.models
        )[0],
    )

    # the measured rows as calibrated (configuration columns + measured_tokens_per_s_per_gpu), for
    # the study's scaling figure to draw over its prediction
    result.measurements.table.reset_index(drop=True).to_parquet(
        snakemake.output.pilots, index=False
    )
    for line in result.measurements.warnings:
        rule.report(f"warning: {line}")
    for line in result.notes:
        rule.report(f"note: {line}")
    for bound in result.on_bounds:
        rule.report(f"warning: refitted parameter {bound} sits on its bound")
    print(
        f"calibration_id {result.calibration.calibration_id}: refitted "
        f"{', '.join(result.refitted)} on {len(result.rows)} rows of "
        f"{', '.join(map(str, result.measurements.files))}",
        file=sys.stderr,
    )
    print(error_table(result.report), file=sys.stderr)
