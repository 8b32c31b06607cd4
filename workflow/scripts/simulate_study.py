"""Rule simulate_study: concatenate a study's chunks, in order, into one results table."""

import sys

import pandas as pd

from trainscale.dataset import read_parquet, write_parquet
from trainscale.schema import RESULT_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

chunks = [read_parquet(path, RESULT_COLUMNS) for path in snakemake.input.chunks]
results = pd.concat(chunks, ignore_index=True)
write_parquet(
    results,
    snakemake.output.results,
    RESULT_COLUMNS,
    {"study": snakemake.wildcards.study},
)
print(f"{len(results)} rows from {len(chunks)} chunks", file=sys.stderr)
