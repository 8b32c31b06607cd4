"""Rule simulate_study: append a study's chunks, in order, into one results table (streamed:
one chunk in memory at a time, one row group per chunk)."""

import sys

from trainscale.io.parquet import ParquetStream, read_table
from trainscale.schema import RESULT_COLUMNS
from trainscale.workflow import rule_script

metadata = {"study": snakemake.wildcards.study}
with rule_script(snakemake) as rule:
    with ParquetStream(snakemake.output.results, RESULT_COLUMNS, metadata) as out:
        for path in snakemake.input.chunks:
            out.write(read_table(path))  # a corrupt chunk is named; nothing is left behind
    print(f"{out.rows} rows from {len(snakemake.input.chunks)} chunks", file=sys.stderr)
