"""Rule simulate_study: append a study's chunks, in order, into one results table (streamed:
one chunk in memory at a time, one row group per chunk)."""

import sys

import pyarrow.parquet as pq

from trainscale.dataset import ParquetStream
from trainscale.schema import RESULT_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

metadata = {"study": snakemake.wildcards.study}
with ParquetStream(snakemake.output.results, RESULT_COLUMNS, metadata) as out:
    for path in snakemake.input.chunks:
        out.write(pq.read_table(path))
print(f"{out.rows} rows from {len(snakemake.input.chunks)} chunks", file=sys.stderr)
