"""Rule study_configurations: expand one study file into its configuration and rejects tables."""

import sys

from trainscale.dataset import write_parquet
from trainscale.errors import TrainscaleError
from trainscale.study import REJECT_COLUMNS, configuration_columns, expand_study, load_study

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit)

try:
    study = load_study(snakemake.input.study, schema=snakemake.input.schema)
    configurations, rejects = expand_study(study)
except TrainscaleError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(1)

columns = configuration_columns(study)
write_parquet(configurations, snakemake.output.configurations, columns, {"study": study.name})
write_parquet(rejects, snakemake.output.rejects, (*columns, *REJECT_COLUMNS), {"study": study.name})
print(
    f"{study.path}: {study.grid_size} grid rows -> {len(configurations)} configurations, "
    f"{rejects['row'].nunique()} rows dropped ({len(rejects)} problems, see "
    f"{snakemake.output.rejects})",
    file=sys.stderr,
)
for reason, count in rejects["reason"].value_counts(sort=False).items():
    print(f"  {count} x {reason}", file=sys.stderr)
