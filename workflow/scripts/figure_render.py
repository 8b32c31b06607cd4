"""Rule figure: draw figure {name} from its named inputs (trainscale.figures.FIGURES)."""

import sys

import matplotlib as mpl

from trainscale.errors import TrainscaleError
from trainscale.figures import FIGURES, render_figure
from trainscale.report import apply_style

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)
mpl.use("Agg")
apply_style()

name = snakemake.wildcards.name
inputs = {key: str(snakemake.input[key]) for key in FIGURES[name].inputs}
stem = str(snakemake.output.png).removesuffix(".png")
try:
    written = render_figure(name, stem, inputs)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
