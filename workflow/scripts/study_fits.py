"""Rule study_fits: fit every series of one study (trainscale.tables.study_fits.render_fits)."""

from trainscale.dataset import read_study_results
from trainscale.study.report import select_rows
from trainscale.tables.study_fits import render_fits
from trainscale.workflow import rule_script

name = snakemake.wildcards.study
stem = str(snakemake.output.csv).removesuffix(".csv")
with rule_script(snakemake) as rule:
    loaded = rule.study_outputs()
    frame = read_study_results(snakemake.input.simulated, name)
    written = render_fits(stem, select_rows(frame, loaded.spec), loaded.spec, name)
    rule.wrote(written)
