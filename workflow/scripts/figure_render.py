"""Rule figure: draw figure {name} from its named inputs and catalogue files (FIGURES)."""

import sys

import matplotlib as mpl

from trainscale.errors import TrainscaleError
from trainscale.figures import FIGURES, render_figure
from trainscale.report import apply_style
from trainscale.sim.catalogue import load_catalogue_files

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)
mpl.use("Agg")
apply_style()

name = snakemake.wildcards.name
output = FIGURES[name]
inputs = {key: str(snakemake.input[key]) for key in output.inputs}
stem = str(snakemake.output.png).removesuffix(".png")
try:
    # The catalogue files the rule declares (Output.catalogue_files), loaded from those paths.
    files = {key: snakemake.input[key] for key in output.catalogue_files()}
    written = render_figure(name, stem, inputs, load_catalogue_files(files))
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
