"""Rule simulate_study: append a study's chunks, in order, into one results table (streamed:
one chunk in memory at a time, one row group per chunk)."""

import sys

from trainscale.dataset import ParquetStream, read_table
from trainscale.errors import TrainscaleError
from trainscale.schema import RESULT_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

metadata = {"study": snakemake.wildcards.study}
try:
    with ParquetStream(snakemake.output.results, RESULT_COLUMNS, metadata) as out:
        for path in snakemake.input.chunks:
            out.write(read_table(path))  # a corrupt chunk is named; nothing is left behind
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
print(f"{out.rows} rows from {len(snakemake.input.chunks)} chunks", file=sys.stderr)
