"""Rule ingest_run: one run folder -> its measured rows and its per-step table (Parquet).

Warnings (garbled lines skipped, duplicate lines dropped, power not covering the steps) go to the
job's log, every one; they are also kept in the rows' ``warnings`` column. With the config key
``ingest.strict`` (``params.strict``) any warning is an error: the job fails and writes nothing.
The log replaces ``sys.stderr``: a :class:`~trainscale.errors.TrainscaleError` is printed there
as one ``error: …`` line, any other error's traceback lands in it too. It is closed at exit,
after the real stderr is put back: left open, it gave ``ResourceWarning: unclosed file`` at
interpreter exit.
"""

import atexit
import sys
import warnings
from pathlib import Path

from trainscale.errors import TrainscaleError
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

try:
    results = write_ingested(
        Path(snakemake.input.manifest).parent,
        snakemake.output.results,
        snakemake.output.steps,
        hardware=load_hardware(snakemake.input.hardware),
        models=load_models(snakemake.input.models),
        strict=bool(snakemake.params.strict),
    )
except TrainscaleError as error:
    strict = " (config ingest.strict: warnings are errors)" if snakemake.params.strict else ""
    print(f"error{strict}: {error}", file=sys.stderr)
    sys.exit(1)
for _, row in results.iterrows():
    print(
        f"{row['run_id']} {row['config_id']}: {row['n_steps']} steady steps, "
        f"step {row['step_time_s']:.4g} s, {row['tokens_per_s']:.6g} tokens/s"
        + (f"; warnings: {row['warnings']}" if row["warnings"] else ""),
        file=sys.stderr,
    )
print(f"wrote {snakemake.output.results} and {snakemake.output.steps}", file=sys.stderr)
