"""Rule study_points: the plotted points of one study with their winning plans
(trainscale.tables.study_points.render_points), and in points.md the points the study asked for
that have no plan, with the reason (trainscale.figures.study_scaling.unplanned_points)."""

import pandas as pd

from trainscale.dataset import read_study_results
from trainscale.figures._study_text import unplanned_points
from trainscale.sim.energy import load_power_terms
from trainscale.study.report import select_rows
from trainscale.tables.study_points import bill_columns, render_points
from trainscale.workflow import rule_script

name = snakemake.wildcards.study
stem = str(snakemake.output.csv).removesuffix(".csv")
with rule_script(snakemake) as rule:
    loaded = rule.study_outputs()
    frame = read_study_results(snakemake.input.simulated, name)
    hbm = {key: gpu.hbm_bytes for key, gpu in loaded.hardware.gpus.items()}
    selected = select_rows(frame, loaded.spec)
    bill = None
    if loaded.study.bill:  # time, energy and cost to train, under the study's calibration
        own = snakemake.input.get("calibration")
        terms = load_power_terms(own or snakemake.input.shipped_calibration)
        bill = bill_columns(selected, loaded.study.bill, loaded.hardware, terms)
    rejects = pd.read_parquet(snakemake.input.rejects)
    unplanned = unplanned_points(frame, loaded.spec, loaded.hardware, rejects)
    written = render_points(stem, selected, frame, loaded.spec, hbm, bill, not_plotted=unplanned)
    rule.wrote(written)
