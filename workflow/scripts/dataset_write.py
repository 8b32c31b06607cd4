"""Rule dataset: every source's rows in the dataset schema, hive-partitioned by source and study.

The partitions are written one at a time (trainscale.dataset.write_dataset_parts). A study's
results are streamed from results/sim/<study>.parquet in batches, in their own (grid) order, so
memory holds one batch, not the study; the small published and measured tables are sorted.
"""

import sys
from pathlib import Path

from trainscale.dataset import DATASET_ROW_GROUP_ROWS, write_dataset_parts
from trainscale.io.parquet import open_parquet, read_parquet
from trainscale.schema import DATASET_COLUMNS
from trainscale.workflow import rule_script


def _batches(path):
    def load(columns=None):
        with open_parquet(path) as results:  # a corrupt file is named
            yield from results.iter_batches(batch_size=DATASET_ROW_GROUP_ROWS, columns=columns)

    return load


def _frames(paths):
    return lambda columns=None: [read_parquet(path, DATASET_COLUMNS) for path in paths]


parts = {("sim", Path(path).stem): _batches(path) for path in snakemake.input.sim}
parts[("published", "published")] = _frames([snakemake.input.published])
parts[("measured", "runs")] = _frames(list(snakemake.input.measured))

with rule_script(snakemake) as rule:
    rule.wrote(write_dataset_parts(parts, snakemake.output.dataset))
    print(f"{snakemake.output.dataset} written", file=sys.stderr)
