"""Rule study_scaling: draw one study's scaling figure (trainscale.figures.study_scaling)."""

import matplotlib as mpl
import pandas as pd

from trainscale.commands.rule_script import rule_script
from trainscale.dataset import read_study_results
from trainscale.figures.study_scaling import render_scaling, setup_note, unplanned_points
from trainscale.report import apply_style
from trainscale.sim.frameworks import DEFAULT_FRAMEWORK
from trainscale.study.report import select_rows

mpl.use("Agg")
apply_style()

name = snakemake.wildcards.study
stem = str(snakemake.output.png).removesuffix(".png")
with rule_script(snakemake) as rule:
    loaded = rule.study_outputs()
    hardware, models, study, spec = loaded.hardware, loaded.models, loaded.study, loaded.spec
    simulated = read_study_results(snakemake.input.simulated, name)
    rows = select_rows(simulated, spec)
    fits = pd.read_csv(snakemake.input.fits, keep_default_na=False, na_values=[""])
    note = setup_note(
        study, spec, hardware, DEFAULT_FRAMEWORK, dropped_memory=rows.attrs["dropped_memory"]
    )
    written = render_scaling(
        stem,
        rows,
        spec,
        note=note,
        hardware=hardware,
        models=models,
        fits=fits,
        title=f"Study {name}: scaling",
        pilots=pd.read_parquet(snakemake.input.pilots) if snakemake.input.get("pilots") else None,
        unplanned=unplanned_points(
            simulated, spec, hardware, pd.read_parquet(snakemake.input.rejects)
        ),
    )
    rule.wrote(written)
