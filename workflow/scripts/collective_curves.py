"""Rule collective_curves: the collective cost model's times and bus bandwidths, every GPU."""

import sys

from trainscale.io.parquet import write_parquet
from trainscale.schema import COLLECTIVE_CURVE_COLUMNS
from trainscale.sim.collective_curves import collective_curves
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    curves = collective_curves(
        rule.calibration(),
        catalogue=catalogue,
        gpus=list(catalogue.hardware.gpus),
        models=catalogue.models,
    )

    write_parquet(curves, snakemake.output.curves, COLLECTIVE_CURVE_COLUMNS)
    print(f"{len(curves)} rows: {curves['gpu'].nunique()} GPUs", file=sys.stderr)
