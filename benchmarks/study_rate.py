"""Benchmark: the rates a study's size estimate uses (trainscale.study.scale).

Measures, in this process, on the 10^5-row study of ``benchmarks/workflow_scale.py`` (memory and
tp-per-node filters on):

- the expansion rate, grid rows per second of ``write_study_configurations`` (derive, filters,
  validator and the ``fits_memory`` prediction: the ``study_configurations`` checkpoint);
- the simulate rate, kept rows per second of ``simulate_configurations`` on chunks of 2,000 rows
  (``"auto"`` micro-batches resolved, as a ``simulate_chunk`` job does);
- the start cost of one job: a fresh Python that imports what ``simulate_chunk`` imports and
  loads the catalogues and calibration (best of three), before Snakemake's own scheduling.

Run: ``nice python benchmarks/study_rate.py`` from the repository root with the package
importable (``PYTHONPATH=src``). It prints the three numbers; copy them into
:data:`trainscale.study.scale.RATES` with the date and machine when they change.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workflow_scale import study

from trainscale.io.parquet import read_frame
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.chunks import write_study_configurations
from trainscale.study.load import load_study
from trainscale.study.simulate import simulate_configurations

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "study.schema.yaml"
JOB_START = (
    "from trainscale.io.parquet import config_ids, read_frame, write_parquet\n"
    "from trainscale.sim.calibration import load_calibration\n"
    "from trainscale.sim.catalogue import load_catalogue\n"
    "from trainscale.study.simulate import simulate_configurations\n"
    "load_catalogue(); load_calibration()\n"
)


def main() -> None:
    catalogue, calibration = load_catalogue(), load_calibration()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        path = folder / "scale_1e5.yaml"
        path.write_text(yaml.safe_dump(study(5, 2000)))
        loaded = load_study(path, schema=SCHEMA, hardware=catalogue.hardware,
                            models=catalogue.models)  # fmt: skip
        start = time.perf_counter()
        summary, _ = write_study_configurations(
            loaded, directory=folder / "configurations", rejects=folder / "rejects.parquet",
            counts=folder / "counts.json", rows_per_job=2000, catalogue=catalogue,
            calibration=calibration,
        )  # fmt: skip
        expand_s = time.perf_counter() - start
        chunks = sorted((folder / "configurations").glob("*.parquet"))[:10]
        rows, start = 0, time.perf_counter()
        for chunk in chunks:
            frame = read_frame(chunk, dtype_backend="numpy_nullable")
            simulate_configurations(frame, loaded.filters, catalogue=catalogue,
                                    calibration=calibration)  # fmt: skip
            rows += len(frame)
        simulate_s = time.perf_counter() - start
    starts = []
    for _ in range(3):
        begin = time.perf_counter()
        subprocess.run([sys.executable, "-c", JOB_START], check=True)
        starts.append(time.perf_counter() - begin)
    rate = summary.grid_rows / expand_s
    print(f"expansion: {summary.grid_rows:,} grid rows in {expand_s:.2f} s = {rate:,.0f} "
          f"grid rows/s ({summary.kept_rows:,} kept)")  # fmt: skip
    print(f"simulate: {rows:,} rows in {simulate_s:.2f} s = {rows / simulate_s:,.0f} rows/s")
    print(f"job start: {min(starts):.2f} s (best of 3)")


if __name__ == "__main__":
    main()
