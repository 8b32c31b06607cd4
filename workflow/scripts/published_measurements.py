"""Rule published_measurements: published throughput rows in the dataset schema."""

import sys

from trainscale.dataset import published_rows, write_parquet
from trainscale.errors import TrainscaleError
from trainscale.published.measurements import load_published
from trainscale.schema import DATASET_COLUMNS

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    published = load_published(snakemake.input.csv)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

rows = published_rows(published)
write_parquet(rows, snakemake.output.published, DATASET_COLUMNS)
print(
    f"{snakemake.input.csv}: {len(rows)} throughput rows; {len(published.collectives)} "
    f"collective rows and {len(published.rejects)} rejected rows are in the validation table",
    file=sys.stderr,
)
