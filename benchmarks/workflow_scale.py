"""Benchmark: the workflow on sweeps of 10^5, 10^6 and 10^7 grid rows (bounded memory, scale).

For each size it copies the workflow into a temporary folder, writes one study whose grid has
exactly that many rows (num_gpus x global_batch x micro_batch x tp x pp x seq_len, then
sharding and model, then GPU and precision), and runs ``snakemake --cores 2 results/dataset``
there (the study's configuration checkpoint, its simulate jobs, the study table, the published
rows and the dataset). It prints, per size: the end-to-end wall time, the rows that survive the
filters, the number of jobs per rule, and per rule the longest job and the largest peak memory
(max_rss from Snakemake's ``benchmark:`` files), plus the largest peak of any process the run
started. Targets on a 2-core machine: 10^6 rows in <= 60 s, 10^7 in <= 10 min, every job
<= 2 GiB.

Run: ``nice -n 10 python benchmarks/workflow_scale.py [--sizes 5 6 7] [--rows-per-job 100000]``
from the repository root (the package importable: ``pip install -e .`` or ``PYTHONPATH=src``).
Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "rules", "workflow", "config", "profiles", "environment.yml", "data")

#: Sweep axes, 4,000 rows; seq_len fills 10^5; the extra axes multiply by 10 each.
BASE_AXES = {
    "num_gpus": [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
    "global_batch": [256, 512, 1024, 2048, 4096],
    "micro_batch": [1, 2, 4, 8],
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 4, 8, 16],
}
EXTRA_AXES = [
    {"sharding": ["ddp", "zero1", "zero2", "fsdp", "hsdp"], "model": ["llama2-7b", "llama2-13b"]},
    {
        "gpu": ["v100-sxm-32gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200"],
        "precision": ["bf16", "fp8"],
    },
]
FIXED = {
    "model": "llama2-7b", "gpu": "h100-sxm-80gb", "sharding": "fsdp", "recompute": "none",
    "precision": "bf16",
}  # fmt: skip


def study(exponent: int, rows_per_job: int) -> dict:
    """A study with exactly 10**exponent grid rows."""
    if exponent < 5:
        raise ValueError("sizes start at 10^5 rows")
    sweep = dict(BASE_AXES)
    for extra in EXTRA_AXES[: exponent - 5]:
        sweep.update(extra)
    others = math.prod(len(v) for v in sweep.values())
    sweep["seq_len"] = [1024 * k for k in range(1, 10**exponent // others + 1)]
    assert math.prod(len(v) for v in sweep.values()) == 10**exponent
    return {
        "description": f"Scale benchmark: 10^{exponent} grid rows.",
        "fixed": {k: v for k, v in FIXED.items() if k not in sweep},
        "sweep": sweep,
        "filters": {"fits_memory": True, "max_tp_per_node": True},
        "rows_per_job": rows_per_job,
    }


def copy_workflow(target: Path, name: str, data: dict) -> None:
    for entry in WORKFLOW_FILES:
        source = REPO / entry
        if source.is_dir():
            shutil.copytree(source, target / entry, ignore=shutil.ignore_patterns("runs"))
        else:
            shutil.copy2(source, target / entry)
    (target / "config" / "studies" / f"{name}.yaml").write_text(yaml.safe_dump(data))
    config_path = target / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config.update(studies=[name], figures=[], tables=[])
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def job_benchmarks(workdir: Path) -> dict[str, list[tuple[float, float]]]:
    """rule -> [(seconds, max_rss MB)] from results/benchmarks/<rule>/**.tsv."""
    jobs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for path in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        rule = path.relative_to(workdir / "results" / "benchmarks").parts[0]
        with path.open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                rss = float(row["max_rss"]) if row["max_rss"] not in ("", "NA", "-") else 0.0
                jobs[rule].append((float(row["s"]), rss))
    return jobs


def run(exponent: int, rows_per_job: int, keep: bool) -> dict:
    name = f"scale_1e{exponent}"
    workdir = Path(tempfile.mkdtemp(prefix=f"trainscale_{name}_"))
    copy_workflow(workdir, name, study(exponent, rows_per_job))
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINSCALE_DATA", "SNAKEMAKE_PROFILE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "results/dataset"],
        cwd=workdir, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"10^{exponent}: snakemake failed in {workdir}")
    counts = json.loads((workdir / f"results/studies/{name}/chunk_counts.json").read_text())
    leftover = list((workdir / f"results/studies/{name}/chunks").glob("*.parquet"))
    result = {
        "grid_rows": counts["grid_rows"],
        "rows": counts["rows"],
        "chunks": counts["chunks"],
        "wall_s": wall,
        "peak_process_mb": peak_mb,
        "jobs": job_benchmarks(workdir),
        "leftover_chunks": len(leftover),
        "workdir": str(workdir),
    }
    if not keep:
        shutil.rmtree(workdir)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 6, 7], help="exponents")
    parser.add_argument(
        "--rows-per-job", type=int, default=100_000,
        help="the study's rows_per_job (each simulate job costs about 3 s of start-up)",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the temporary workflow copies")
    args = parser.parse_args()
    print(f"rows_per_job {args.rows_per_job}, snakemake --cores 2 results/dataset")
    for exponent in args.sizes:
        r = run(exponent, args.rows_per_job, args.keep)
        print(
            f"\n10^{exponent} grid rows: {r['wall_s']:.1f} s end to end; {r['rows']:,} rows "
            f"survive the filters -> {r['chunks']} simulate jobs; largest process "
            f"{r['peak_process_mb']:.0f} MB; chunk files left: {r['leftover_chunks']}"
        )
        print(f"  {'rule':<24} {'jobs':>5} {'longest s':>10} {'total s':>9} {'max_rss MB':>11}")
        for rule, jobs in sorted(r["jobs"].items()):
            seconds = [s for s, _ in jobs]
            print(
                f"  {rule:<24} {len(jobs):>5} {max(seconds):>10.1f} {sum(seconds):>9.1f} "
                f"{max(rss for _, rss in jobs):>11.0f}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
