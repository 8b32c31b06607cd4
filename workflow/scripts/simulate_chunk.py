"""Rule simulate_chunk: simulate one chunk of a study's configuration table."""

import sys

import pandas as pd

from trainscale.dataset import config_ids, write_parquet
from trainscale.errors import TrainscaleError
from trainscale.schema import RESULT_COLUMNS
from trainscale.study import chunk_rows, simulate_configurations

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

index, count = int(snakemake.wildcards.chunk), int(snakemake.params.chunks)
table = pd.read_parquet(snakemake.input.configurations, dtype_backend="numpy_nullable")
configurations = chunk_rows(table, index, count)
try:
    results, dropped = simulate_configurations(configurations, snakemake.params.filters)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

write_parquet(results, snakemake.output.chunk, RESULT_COLUMNS)
print(f"chunk {index + 1} of {count}: {len(results)} rows simulated", file=sys.stderr)
if len(dropped):
    print(f"{len(dropped)} rows dropped by filters.fits_memory:", file=sys.stderr)
    for config_id, memory in zip(config_ids(dropped), dropped["mem_gib_per_gpu"], strict=True):
        print(f"  {config_id}: {memory:.1f} GiB per GPU", file=sys.stderr)
