"""Rule study_fits: fit every series of one study (trainscale.tables.study_fits.render_fits)."""

import sys

from trainscale.dataset import read_study_results
from trainscale.errors import TrainscaleError
from trainscale.sim.model.shape import load_models
from trainscale.sim.system.hardware import load_hardware
from trainscale.study.report import report_spec, select_rows
from trainscale.study.sweep import load_study
from trainscale.tables.study_fits import render_fits

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

name = snakemake.wildcards.study
stem = str(snakemake.output.csv).removesuffix(".csv")
try:
    hardware = load_hardware(snakemake.input.hardware)
    study = load_study(
        snakemake.input.study,
        schema=snakemake.input.schema,
        hardware=hardware,
        models=load_models(snakemake.input.models),
    )
    spec = report_spec(study)
    frame = read_study_results(snakemake.input.simulated, name)
    written = render_fits(stem, select_rows(frame, spec), spec, name)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
