"""Rule ingest_run: one run folder -> its measured rows and its per-step table (Parquet).

Warnings (garbled lines skipped, duplicate lines dropped, power not covering the steps) go to the
job's log, every one; they are also kept in the rows' ``warnings`` column. With the config key
``ingest.strict`` (``params.strict``) any warning is an error: the job fails and writes nothing.
The log replaces ``sys.stderr`` (trainscale.workflow): a
:class:`~trainscale.errors.TrainscaleError` is printed there as one ``error: …`` line, any other
error's traceback lands in it too.
"""

import sys
import warnings
from pathlib import Path

from trainscale.ingest.runs import write_ingested
from trainscale.workflow import rule_script

strict = " (config ingest.strict: warnings are errors)" if snakemake.params.strict else ""
with rule_script(snakemake, error_note=strict) as rule:
    warnings.simplefilter("always", RuntimeWarning)  # every ingestion warning goes to the log
    catalogue = rule.catalogue_files(["hardware", "models"])
    results = write_ingested(
        Path(snakemake.input.manifest).parent,
        snakemake.output.results,
        snakemake.output.steps,
        hardware=catalogue["hardware"],
        models=catalogue["models"],
        strict=bool(snakemake.params.strict),
    )
    for _, row in results.iterrows():
        print(
            f"{row['run_id']} {row['config_id']}: {row['n_steps']} steady steps, "
            f"step {row['step_time_s']:.4g} s, {row['tokens_per_s']:.6g} tokens/s"
            + (f"; warnings: {row['warnings']}" if row["warnings"] else ""),
            file=sys.stderr,
        )
    rule.wrote([snakemake.output.results, snakemake.output.steps])
