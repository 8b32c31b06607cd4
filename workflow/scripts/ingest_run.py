"""Rule ingest_run: one run folder -> its measured rows and its per-step table (Parquet)."""

import sys
import warnings
from pathlib import Path

from trainscale.runs import write_ingested

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)
warnings.simplefilter("always")  # garbled-line warnings go to the log, every one

results = write_ingested(
    Path(snakemake.input.manifest).parent, snakemake.output.results, snakemake.output.steps
)
for _, row in results.iterrows():
    print(
        f"{row['run_id']} {row['config_id']}: {row['n_steps']} steady steps, "
        f"step {row['step_time_s']:.4g} s, {row['tokens_per_s']:.6g} tokens/s",
        file=sys.stderr,
    )
print(f"wrote {snakemake.output.results} and {snakemake.output.steps}", file=sys.stderr)
