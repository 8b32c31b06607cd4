"""Rule sim_vs_measured: every measured row of the dataset with its prediction, or why not,
and the warnings its ingestion gave (column ``warnings``; also printed to the log)."""

import sys

from trainscale.dataset import read_dataset
from trainscale.ingest.accuracy import predict_measured
from trainscale.ingest.manifest import load_manifest
from trainscale.io.parquet import write_parquet
from trainscale.schema import SIM_VS_MEASURED_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    measured = read_dataset(snakemake.input.dataset, sources=("measured",))
    catalogue = rule.catalogue()
    manifests = [
        load_manifest(path, hardware=catalogue.hardware, models=catalogue.models)
        for path in snakemake.input.manifests
    ]
    table = predict_measured(
        measured[measured["source"] == "measured"].reset_index(drop=True),
        rule.calibration(),
        catalogue=catalogue,
        manifests={manifest.run_id: manifest for manifest in manifests},
    )

    write_parquet(table, snakemake.output.table, SIM_VS_MEASURED_COLUMNS)
    for row in table.itertuples():
        warned = f"; warnings: {row.warnings}" if row.warnings else ""
        print(f"{row.run_id} {row.config_id}: {row.reason or 'predicted'}{warned}", file=sys.stderr)
