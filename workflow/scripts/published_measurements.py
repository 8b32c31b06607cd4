"""Rule published_measurements: published throughput rows in the dataset schema (checked and
resolved with the hardware, models and frameworks catalogues the rule declares)."""

import sys

from trainscale.io.parquet import write_parquet
from trainscale.published.measurements import load_published
from trainscale.published.rows import published_rows
from trainscale.schema import DATASET_COLUMNS
from trainscale.sim.frameworks import load_frameworks
from trainscale.sim.model.shape import load_models
from trainscale.sim.system.hardware import load_hardware
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    hardware = load_hardware(snakemake.input.hardware)
    models = load_models(snakemake.input.models)
    frameworks = load_frameworks(snakemake.input.frameworks)
    published = load_published(
        snakemake.input.csv,
        hardware=hardware,
        models=models,
        frameworks=tuple(frameworks),
        sources=snakemake.input.sources,
    )

    rows = published_rows(published, hardware=hardware, models=models, frameworks=frameworks)
    write_parquet(rows, snakemake.output.published, DATASET_COLUMNS)
    print(
        f"{snakemake.input.csv}: {len(rows)} throughput rows; {len(published.collectives)} "
        f"collective rows and {len(published.rejects)} rejected rows are in the validation table",
        file=sys.stderr,
    )
