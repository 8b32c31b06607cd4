"""Rule table: write table {name} from its named inputs and catalogue files (TABLES)."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.sim.catalogue import load_catalogue_files
from trainscale.tables import TABLES, render_table

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

name = snakemake.wildcards.name
output = TABLES[name]
inputs = {key: str(snakemake.input[key]) for key in output.inputs}
stem = str(snakemake.output.csv).removesuffix(".csv")
try:
    # The catalogue files the rule declares (Output.catalogue_files), loaded from those paths.
    files = {key: snakemake.input[key] for key in output.catalogue_files()}
    written = render_table(name, stem, inputs, load_catalogue_files(files))
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
