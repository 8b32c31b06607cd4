"""Rule published_holdout: predict each published throughput row by a fit without its source."""

import sys

from trainscale import __version__
from trainscale.calibrate.fit import held_out_predictions
from trainscale.dataset import write_parquet
from trainscale.errors import TrainscaleError
from trainscale.published.holdout import HOLDOUT_COLUMNS, holdout_rows
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    calibration = load_calibration()
    held = held_out_predictions(load_published(snakemake.input.csv))
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

rows = holdout_rows(held, calibration_id=calibration.calibration_id, simulator_version=__version__)
write_parquet(rows, snakemake.output.holdout, HOLDOUT_COLUMNS)
for citation, group in rows.groupby("citation", sort=True):
    print(
        f"{citation}: {len(group)} rows, held-out MAPE {group['ape_pct'].mean():.2f} %",
        file=sys.stderr,
    )
print(f"all: {len(rows)} rows, held-out MAPE {rows['ape_pct'].mean():.2f} %", file=sys.stderr)
