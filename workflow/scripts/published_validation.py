"""Rule published_validation: predict every published row; observed, predicted and error (with
the catalogue files and calibration the rule declares)."""

import sys

from trainscale import __version__
from trainscale.io.parquet import write_parquet
from trainscale.published.accuracy import validate_published
from trainscale.published.rows import validation_rows
from trainscale.schema.results import VALIDATION_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    calibration = rule.calibration()
    published = rule.published(catalogue)
    validated = validate_published(calibration, published, catalogue=catalogue)

    rows = validation_rows(
        validated, calibration_id=calibration.calibration_id, simulator_version=__version__
    )
    write_parquet(rows, snakemake.output.validation, VALIDATION_COLUMNS)
    for kind, group in rows[rows["status"] == "predicted"].groupby("kind"):
        print(f"{kind}: {len(group)} rows, MAPE {group['ape_pct'].mean():.2f} %", file=sys.stderr)
    print(f"rejected: {(rows['status'] == 'rejected').sum()} rows", file=sys.stderr)
