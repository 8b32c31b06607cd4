"""Rule paper_claims: the paper's claims reproduced with the paper setup, against its values."""

import sys

from trainscale.io.parquet import read_frame, write_parquet
from trainscale.paper.claims import claim_rows
from trainscale.schema import CLAIM_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    claims = claim_rows(
        rule.calibration(),
        catalogue=rule.catalogue(),
        sensitivity=read_frame(snakemake.input.sensitivity),  # a corrupt file is named
    )

    write_parquet(claims, snakemake.output.claims, CLAIM_COLUMNS)
    for row in claims.itertuples():
        print(
            f"{row.key}: {row.reproduced_value:.2f} ({'holds' if row.holds else 'off'})",
            file=sys.stderr,
        )
