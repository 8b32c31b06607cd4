"""Rule study_points: the plotted points of one study with their winning plans
(trainscale.tables.study_points.render_points)."""

import sys

from trainscale.dataset import read_study_results
from trainscale.errors import TrainscaleError
from trainscale.sim.model.shape import load_models
from trainscale.sim.system.hardware import load_hardware
from trainscale.study.report import report_spec, select_rows
from trainscale.study.sweep import load_study
from trainscale.tables.study_points import render_points

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
    hbm = {key: gpu.hbm_bytes for key, gpu in hardware.gpus.items()}
    written = render_points(stem, select_rows(frame, spec), frame, spec, hbm)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)
for path in written:
    print(f"wrote {path}", file=sys.stderr)
