"""Rule table: write table {name} from its named inputs (trainscale.tables.TABLES)."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.tables import TABLES, render_table

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

name = snakemake.wildcards.name
inputs = {key: str(snakemake.input[key]) for key in TABLES[name].inputs}
stem = str(snakemake.output.csv).removesuffix(".csv")
try:
    written = render_table(name, stem, inputs)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
