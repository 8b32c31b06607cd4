"""Rule collective_curves: the collective cost model's times and bus bandwidths, every GPU."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.io.parquet import write_parquet
from trainscale.schema import COLLECTIVE_CURVE_COLUMNS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue
from trainscale.sim.collective_curves import collective_curves

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    catalogue = load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES})
    curves = collective_curves(
        load_calibration(snakemake.input.calibration),
        catalogue=catalogue,
        gpus=list(catalogue.hardware.gpus),
        models=catalogue.models,
    )
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

write_parquet(curves, snakemake.output.curves, COLLECTIVE_CURVE_COLUMNS)
print(f"{len(curves)} rows: {curves['gpu'].nunique()} GPUs", file=sys.stderr)
