"""Rule published_holdout: predict each published throughput row by a fit without its source
(with the catalogue files the rule declares; its calibration input gives the id recorded)."""

import sys

from trainscale import __version__
from trainscale.calibrate.fit import held_out_predictions
from trainscale.io.parquet import write_parquet
from trainscale.published.holdout import holdout_rows
from trainscale.schema.results import HOLDOUT_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    calibration = rule.calibration()
    published = rule.published(catalogue)
    held = held_out_predictions(published, catalogue=catalogue)

    rows = holdout_rows(
        held, calibration_id=calibration.calibration_id, simulator_version=__version__
    )
    write_parquet(rows, snakemake.output.holdout, HOLDOUT_COLUMNS)
    for citation, group in rows.groupby("citation", sort=True):
        print(
            f"{citation}: {len(group)} rows, held-out MAPE {group['ape_pct'].mean():.2f} %",
            file=sys.stderr,
        )
    print(f"all: {len(rows)} rows, held-out MAPE {rows['ape_pct'].mean():.2f} %", file=sys.stderr)
