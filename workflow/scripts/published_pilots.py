"""Rule published_pilots: every published scaling series calibrated on its smallest GPU count
predicts its larger counts (with the catalogue files and calibration the rule declares)."""

import sys

from trainscale import __version__
from trainscale.calibrate.pilot_series import PILOT_TABLE_COLUMNS, pilot_errors, pilot_table
from trainscale.dataset import write_parquet
from trainscale.errors import TrainscaleError
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    calibration = load_calibration(snakemake.input.calibration)
    published = load_published(
        snakemake.input.csv, hardware=catalogue.hardware, models=catalogue.models
    )
    errors = pilot_errors(published, catalogue=catalogue, shipped=calibration)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

rows = pilot_table(errors, calibration_id=calibration.calibration_id, simulator_version=__version__)
write_parquet(rows, snakemake.output.pilots, PILOT_TABLE_COLUMNS)
print(
    f"{rows['series'].nunique()} series, {len(rows)} larger-scale rows: MAPE pilot-calibrated "
    f"{rows['pilot_ape_pct'].mean():.2f} %, base {rows['base_ape_pct'].mean():.2f} %, weak "
    f"scaling {rows['weak_scaling_ape_pct'].mean():.2f} %; {100 * rows['covered'].mean():.1f} % "
    "inside the 80 % pilot interval",
    file=sys.stderr,
)
