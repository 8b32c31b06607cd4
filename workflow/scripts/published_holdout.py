"""Rule published_holdout: predict each published throughput row by a fit without its source
(with the catalogue files the rule declares; its calibration input gives the id recorded)."""

import sys

from trainscale import __version__
from trainscale.calibrate.fit import held_out_predictions
from trainscale.dataset import write_parquet
from trainscale.errors import TrainscaleError
from trainscale.published.holdout import HOLDOUT_COLUMNS, holdout_rows
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    calibration = load_calibration(snakemake.input.calibration)
    published = load_published(
        snakemake.input.csv,
        hardware=catalogue.hardware,
        models=catalogue.models,
        sources=snakemake.input.sources,
    )
    held = held_out_predictions(published, catalogue=catalogue)
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
