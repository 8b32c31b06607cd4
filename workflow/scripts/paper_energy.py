"""Rule paper_energy: the paper setup's node energy and cost per token against GPU count, beside
the metered MLPerf power runs (trainscale.paper.energy)."""

import sys
from pathlib import Path

from trainscale.io.parquet import write_parquet
from trainscale.paper.energy import FIGURE_USD_PER_GPU_HOUR, energy_table
from trainscale.published.power_rows import load_power_rows
from trainscale.published.sources import load_sources
from trainscale.schema import ENERGY_BILL_COLUMNS
from trainscale.sim.energy import load_power_terms
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    catalogue = rule.catalogue()
    rows = load_power_rows(
        Path(snakemake.input.power),
        catalogue,
        load_sources(Path(snakemake.input.sources), frameworks=catalogue.framework_keys),
    )
    table = energy_table(
        rule.calibration(),
        load_power_terms(snakemake.input.calibration),
        catalogue=catalogue,
        power_rows=rows,
        usd_per_gpu_hour=FIGURE_USD_PER_GPU_HOUR,
    )
    write_parquet(table, snakemake.output.energy, ENERGY_BILL_COLUMNS)
    print(f"{len(table)} rows", file=sys.stderr)
