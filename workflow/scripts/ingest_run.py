"""Rule ingest_run: one run folder -> its measured rows and its per-step table (Parquet).

Warnings (garbled lines skipped, duplicate lines dropped, power not covering the steps) go to the
job's log, every one; they are also kept in the rows' ``warnings`` column. The log replaces
``sys.stderr`` (so an error's traceback lands in it too) and is closed at exit, after the real
stderr is put back: left open, it gave ``ResourceWarning: unclosed file`` at interpreter exit.
"""

import atexit
import sys
import warnings
from pathlib import Path

from trainscale.ingest.runs import write_ingested
from trainscale.sim.model.shape import load_models
from trainscale.sim.system.hardware import load_hardware

log = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit, below)
sys.stderr = log


@atexit.register
def _close_log() -> None:
    sys.stderr = sys.__stderr__
    log.close()


warnings.simplefilter("always", RuntimeWarning)  # every ingestion warning goes to the log

results = write_ingested(
    Path(snakemake.input.manifest).parent,
    snakemake.output.results,
    snakemake.output.steps,
    hardware=load_hardware(snakemake.input.hardware),
    models=load_models(snakemake.input.models),
)
for _, row in results.iterrows():
    print(
        f"{row['run_id']} {row['config_id']}: {row['n_steps']} steady steps, "
        f"step {row['step_time_s']:.4g} s, {row['tokens_per_s']:.6g} tokens/s"
        + (f"; warnings: {row['warnings']}" if row["warnings"] else ""),
        file=sys.stderr,
    )
print(f"wrote {snakemake.output.results} and {snakemake.output.steps}", file=sys.stderr)
