"""What the browser test's workflow run is given and gives (tests/conftest.py's ``report_run``):
the browser it needs, a smaller published input and the finished run."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

#: The browser test's Chromium and chromedriver (Debian's packages chromium, chromium-driver).
BROWSER = (Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver"))

#: The published source the browser test's run leaves out of its measurements: 216 of the 291
#: throughput rows, so the refits of the published-data rules (held-out predictions, pilot
#: series, the claims' sensitivity scan) take 37 s of CPU instead of 49 s; every other source
#: stays, and every rule, figure and table runs end to end on them.
REPORT_LEAVES_OUT = "MosaicML llm-foundry MPT training benchmarks"

#: The browser test's run simulates each study in one job (the largest, best_plan, has about
#: 10,000 rows: five jobs of the config's 2,000), each job's start-up paid once.
REPORT_ROWS_PER_JOB = 20_000


@dataclass(frozen=True)
class ReportRun:
    """Every figure and table of the repository's config and the report (``report_run``)."""

    workdir: Path
    config: dict[str, Any]
    run: subprocess.CompletedProcess[str]
    report: subprocess.CompletedProcess[str] | None


def published_without(csv: Path, target: Path, source: str) -> None:
    """Write the published measurements ``csv`` less the rows of ``source`` to ``target``."""
    rows = pd.read_csv(csv, dtype=str, keep_default_na=False)
    assert (rows["source"] == source).any(), f"{csv} has no rows of {source!r}"
    rows[rows["source"] != source].to_csv(target, index=False)
