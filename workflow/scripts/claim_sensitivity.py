"""Rule claim_sensitivity: the claims with NCCL's latency scale pinned, the rest refitted."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.io.parquet import write_parquet
from trainscale.paper.sensitivity import claim_sensitivity
from trainscale.published.measurements import load_published
from trainscale.schema import CLAIM_SENSITIVITY_COLUMNS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    published = load_published(
        snakemake.input.published,
        hardware=catalogue.hardware,
        models=catalogue.models,
        sources=snakemake.input.sources,
    )
    table = claim_sensitivity(
        published, load_calibration(snakemake.input.calibration), catalogue=catalogue
    )
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

write_parquet(table, snakemake.output.sensitivity, CLAIM_SENSITIVITY_COLUMNS)
for row in table.itertuples():
    print(
        f"nccl_latency_scale {row.nccl_latency_scale:g}: drop {row.throughput_drop_pct:.2f} %",
        file=sys.stderr,
    )
