"""Rule claim_sensitivity: the claims with NCCL's latency scale pinned, the rest refitted."""

import sys

from trainscale.io.parquet import write_parquet
from trainscale.paper.sensitivity import claim_sensitivity
from trainscale.schema import CLAIM_SENSITIVITY_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    published = rule.published(catalogue, key="published")
    table = claim_sensitivity(published, rule.calibration(), catalogue=catalogue)

    write_parquet(table, snakemake.output.sensitivity, CLAIM_SENSITIVITY_COLUMNS)
    for row in table.itertuples():
        print(
            f"nccl_latency_scale {row.nccl_latency_scale:g}: drop {row.throughput_drop_pct:.2f} %",
            file=sys.stderr,
        )
