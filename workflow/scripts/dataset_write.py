"""Rule dataset: every source's rows in the dataset schema, hive-partitioned by source and study.

The partitions are written one at a time (trainscale.dataset.write_dataset_parts): memory holds
one study's rows, not the whole dataset.
"""

import sys
from pathlib import Path

from trainscale.dataset import read_parquet, write_dataset_parts
from trainscale.schema import DATASET_COLUMNS, RESULT_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)


def _loader(paths, columns):
    return lambda: [read_parquet(path, columns) for path in paths]


parts = {("sim", Path(path).stem): _loader([path], RESULT_COLUMNS) for path in snakemake.input.sim}
parts[("published", "published")] = _loader([snakemake.input.published], DATASET_COLUMNS)
parts[("measured", "runs")] = _loader(list(snakemake.input.measured), DATASET_COLUMNS)

for path in write_dataset_parts(parts, snakemake.output.dataset):
    print(f"wrote {path}", file=sys.stderr)
print(f"{snakemake.output.dataset} written", file=sys.stderr)
