"""Rule dataset: every source's rows in the dataset schema, hive-partitioned by source and study."""

import sys
from pathlib import Path

from trainscale.dataset import dataset_frame, read_parquet, write_dataset
from trainscale.schema import DATASET_COLUMNS, RESULT_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

sim = {Path(path).stem: read_parquet(path, RESULT_COLUMNS) for path in snakemake.input.sim}
published = read_parquet(snakemake.input.published, DATASET_COLUMNS)
measured = [read_parquet(path, DATASET_COLUMNS) for path in snakemake.input.measured]

frame = dataset_frame(sim, published, measured)
for path in write_dataset(frame, snakemake.output.dataset):
    print(f"wrote {path}", file=sys.stderr)
print(f"{len(frame)} rows in {snakemake.output.dataset}", file=sys.stderr)
