"""Rule study_figure: draw per-study figure {figure} of {study} (trainscale.figures.per_study)."""

import matplotlib as mpl

from trainscale.figures.per_study import STUDY_FIGURES, read_study_data, render_study_figure
from trainscale.report import apply_style
from trainscale.workflow import rule_script

mpl.use("Agg")
apply_style()

name, figure = snakemake.wildcards.study, snakemake.wildcards.figure
stem = str(snakemake.output.png).removesuffix(".png")
with rule_script(snakemake) as rule:
    # the study files the figure reads (StudyFigure.inputs), from the paths its rule declares
    files = {key: snakemake.input.get(key) for key in STUDY_FIGURES[figure].inputs}
    data = read_study_data(name, rule.study_outputs(), snakemake.input.simulated, files)
    rule.wrote(render_study_figure(figure, stem, data))
