"""Rule published_pilots: every published scaling series calibrated on its smallest GPU count
predicts its larger counts (with the catalogue files and calibration the rule declares)."""

import sys

from trainscale import __version__
from trainscale.calibrate.pilot_series import pilot_errors, pilot_table
from trainscale.io.parquet import write_parquet
from trainscale.schema.calibration import PILOT_TABLE_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    calibration = rule.calibration()
    published = rule.published(catalogue)
    errors = pilot_errors(published, catalogue=catalogue, shipped=calibration)

    rows = pilot_table(
        errors, calibration_id=calibration.calibration_id, simulator_version=__version__
    )
    write_parquet(rows, snakemake.output.pilots, PILOT_TABLE_COLUMNS)
    print(
        f"{rows['series'].nunique()} series, {len(rows)} larger-scale rows: MAPE "
        f"pilot-calibrated {rows['pilot_ape_pct'].mean():.2f} %, base "
        f"{rows['base_ape_pct'].mean():.2f} %, weak scaling "
        f"{rows['weak_scaling_ape_pct'].mean():.2f} %; {100 * rows['covered'].mean():.1f} % "
        "inside the 80 % pilot interval",
        file=sys.stderr,
    )
