"""Rule study_points: the plotted points of one study with their winning plans
(trainscale.tables.study_points.render_points)."""

from trainscale.dataset import read_study_results
from trainscale.study.report import select_rows
from trainscale.tables.study_points import render_points
from trainscale.workflow import rule_script

name = snakemake.wildcards.study
stem = str(snakemake.output.csv).removesuffix(".csv")
with rule_script(snakemake) as rule:
    loaded = rule.study_outputs()
    frame = read_study_results(snakemake.input.simulated, name)
    hbm = {key: gpu.hbm_bytes for key, gpu in loaded.hardware.gpus.items()}
    written = render_points(stem, select_rows(frame, loaded.spec), frame, loaded.spec, hbm)
    rule.wrote(written)
