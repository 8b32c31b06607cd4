"""Rule paper_claims: the paper's claims reproduced with the paper setup, against its values."""

import sys

from trainscale.errors import TrainscaleError
from trainscale.io.parquet import read_frame, write_parquet
from trainscale.paper.claims import claim_rows
from trainscale.schema import CLAIM_COLUMNS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    claims = claim_rows(
        load_calibration(snakemake.input.calibration),
        catalogue=load_catalogue({name: snakemake.input[name] for name in CATALOGUE_FILES}),
        sensitivity=read_frame(snakemake.input.sensitivity),  # a corrupt file is named
    )
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

write_parquet(claims, snakemake.output.claims, CLAIM_COLUMNS)
for row in claims.itertuples():
    print(
        f"{row.key}: {row.reproduced_value:.2f} ({'holds' if row.holds else 'off'})",
        file=sys.stderr,
    )
