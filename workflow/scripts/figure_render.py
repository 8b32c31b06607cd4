"""Rule figure: draw figure {name} from its named inputs and catalogue files (FIGURES)."""

import matplotlib as mpl

from trainscale.figures import FIGURES, render_figure
from trainscale.report import apply_style
from trainscale.workflow import rule_script

mpl.use("Agg")
apply_style()

name = snakemake.wildcards.name
stem = str(snakemake.output.png).removesuffix(".png")
with rule_script(snakemake) as rule:
    # The catalogue files the rule declares (Output.catalogue_files), loaded from those paths.
    catalogues = rule.catalogue_files(FIGURES[name].catalogue_files())
    rule.wrote(render_figure(name, stem, dict(snakemake.input.items()), catalogues))
