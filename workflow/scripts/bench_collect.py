"""Rule bench_collect: the run folders of one bench sweep -> their measured rows (Parquet),
ingested with the hardware and models catalogues the rule declares."""

import sys
import warnings

import pandas as pd

from trainscale.ingest.runs import ingest_run
from trainscale.io.parquet import write_parquet
from trainscale.schema import DATASET_COLUMNS
from trainscale.workflow import rule_script

with rule_script(snakemake) as rule:
    warnings.simplefilter("always")  # garbled-line warnings go to the log, every one
    catalogue = rule.catalogue_files(["hardware", "models"])
    frame = pd.concat(
        [
            ingest_run(run_dir, hardware=catalogue["hardware"], models=catalogue["models"])[0]
            for run_dir in snakemake.input.runs
        ],
        ignore_index=True,
    )
    write_parquet(frame, snakemake.output.results, DATASET_COLUMNS)
    for _, row in frame.iterrows():
        print(
            f"{row['run_id']}: {row['tokens_per_s']:.6g} tokens/s, step {row['step_time_s']:.4g} s",
            file=sys.stderr,
        )
