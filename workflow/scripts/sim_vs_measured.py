"""Rule sim_vs_measured: every measured row of the dataset with its prediction, or why not,
and the warnings its ingestion gave (column ``warnings``; also printed to the log)."""

import sys

from trainscale.dataset import read_dataset
from trainscale.errors import TrainscaleError
from trainscale.ingest.accuracy import predict_measured
from trainscale.ingest.runs import load_manifest
from trainscale.io.parquet import write_parquet
from trainscale.schema import SIM_VS_MEASURED_COLUMNS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    measured = read_dataset(snakemake.input.dataset, sources=("measured",))
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    manifests = [
        load_manifest(path, hardware=catalogue.hardware, models=catalogue.models)
        for path in snakemake.input.manifests
    ]
    table = predict_measured(
        measured[measured["source"] == "measured"].reset_index(drop=True),
        load_calibration(snakemake.input.calibration),
        catalogue=catalogue,
        manifests={manifest.run_id: manifest for manifest in manifests},
    )
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

write_parquet(table, snakemake.output.table, SIM_VS_MEASURED_COLUMNS)
for row in table.itertuples():
    warned = f"; warnings: {row.warnings}" if row.warnings else ""
    print(f"{row.run_id} {row.config_id}: {row.reason or 'predicted'}{warned}", file=sys.stderr)
