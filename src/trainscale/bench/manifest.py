"""The harness's run manifest (``run.yaml``, schema ``workflow/schemas/run.schema.yaml``).

Written by rank 0 after the last step, once every log it lists is complete, and validated
against the schema before it is written (temporary file, then rename): a run folder either has
a valid manifest or none, so an interrupted run cannot be ingested by mistake.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainscale.ingest.runs import MANIFEST_NAME, validate_manifest
from trainscale.io.atomic import write_text_atomic

__all__ = ["write_manifest"]


def write_manifest(
    run_dir: Path,
    *,
    run_id: str,
    description: str,
    configuration: dict[str, Any],
    cluster: dict[str, Any],
    logs: list[dict[str, Any]],
    warmup_steps: int,
    trace_warmup_steps: int = 0,
    harness_timing: dict[str, Any],
) -> Path:
    """Validate and write ``run_dir/run.yaml``; return its path.

    Parameters
    ----------
    run_dir
        The run folder (its name is ``run_id``).
    run_id, description, configuration, cluster, logs, harness_timing
        The manifest's sections (see the schema).
    warmup_steps
        Logged steps the ingester drops before the steady state (the harness's warm-up).
    trace_warmup_steps
        Complete profiler steps dropped per rank.

    Raises
    ------
    trainscale.errors.InputFileError
        The manifest would not validate (a bug in the harness: nothing is written).
    """
    data: dict[str, Any] = {
        "run_id": run_id,
        "description": description,
        "configuration": configuration,
        "cluster": cluster,
        "logs": logs,
        "steady_state": {"warmup_steps": warmup_steps, "trace_warmup_steps": trace_warmup_steps},
        "harness_timing": harness_timing,
    }
    path = Path(run_dir) / MANIFEST_NAME
    validate_manifest(data, path)
    text = (
        "# Written by `trainscale bench` (src/trainscale/bench); format:\n"
        "# workflow/schemas/run.schema.yaml. Ingest with `trainscale ingest <this folder>`.\n"
        + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    )
    write_text_atomic(path, text)
    return path
