"""Rule simulate_chunk: simulate one chunk of a study (its own configuration file only), with the
catalogue files and calibration the rule declares as inputs."""

import sys

from trainscale.io.parquet import config_ids, read_frame, write_parquet
from trainscale.schema import RESULT_COLUMNS
from trainscale.study.simulate import simulate_configurations
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    configurations = read_frame(snakemake.input.configurations, dtype_backend="numpy_nullable")
    results, dropped = simulate_configurations(
        configurations,
        snakemake.params.filters,
        catalogue=rule.catalogue(),
        calibration=rule.calibration(),
    )

    write_parquet(results, snakemake.output.chunk, RESULT_COLUMNS)
    print(f"chunk {snakemake.wildcards.chunk}: {len(results)} rows simulated", file=sys.stderr)
    if len(dropped):  # fits_memory is applied when the study is expanded; this is a safety net
        print(f"{len(dropped)} rows dropped by filters.fits_memory:", file=sys.stderr)
        for config_id, memory in zip(config_ids(dropped), dropped["mem_gib_per_gpu"], strict=True):
            print(f"  {config_id}: {memory:.1f} GiB per GPU", file=sys.stderr)
