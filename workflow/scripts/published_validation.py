"""Rule published_validation: predict every published row; observed, predicted and error."""

import sys

from trainscale import __version__
from trainscale.dataset import VALIDATION_COLUMNS, validation_rows, write_parquet
from trainscale.errors import TrainscaleError
from trainscale.published.accuracy import validate_published
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    calibration = load_calibration()
    validated = validate_published(calibration, load_published(snakemake.input.csv))
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

rows = validation_rows(
    validated, calibration_id=calibration.calibration_id, simulator_version=__version__
)
write_parquet(rows, snakemake.output.validation, VALIDATION_COLUMNS)
for kind, group in rows[rows["status"] == "predicted"].groupby("kind"):
    print(f"{kind}: {len(group)} rows, MAPE {group['ape_pct'].mean():.2f} %", file=sys.stderr)
print(f"rejected: {(rows['status'] == 'rejected').sum()} rows", file=sys.stderr)
