"""The harness's run manifest (``run.yaml``, schema ``workflow/schemas/run.schema.yaml``).

Written by rank 0 after the last step, once every log it lists is complete, and validated
against the schema before it is written (temporary file, then rename): a run folder either has
a valid manifest or none, so an interrupted run cannot be ingested by mistake.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainscale.ingest.manifest import MANIFEST_NAME, validate_manifest
from trainscale.io.atomic import write_text_atomic

__all__ = ["harness_purpose", "write_manifest"]


def harness_purpose(device_type: str) -> str:
    """The manifest's ``purpose`` of a harness run on a ``device_type`` (``cpu`` or ``cuda``)
    device. On a GPU the harness times the configured model's training steps after a warm-up, a
    throughput measurement: ``performance``. On the CPU the simulator models no such hardware, so
    the run checks the pipeline end to end: ``harness_test``."""
    return "harness_test" if device_type == "cpu" else "performance"


def write_manifest(
    run_dir: Path,
    *,
    run_id: str,
    purpose: str,
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
    run_id, purpose, description, configuration, cluster, logs, harness_timing
        The manifest's sections (see the schema; :func:`harness_purpose` gives ``purpose``).
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
        "purpose": purpose,
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
