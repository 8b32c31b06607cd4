# trainscale: what does adding GPUs buy when training a large language model?
#
# `snakemake --cores all` simulates every study in config/config.yaml, normalises and predicts
# the published measurements, gathers all sources into results/dataset and renders the figures
# and tables. Layout, conventions and options: config/README.md.
from snakemake.utils import min_version

min_version("9")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/simulate.smk"
include: "rules/published.smk"
include: "rules/pilots.smk"
include: "rules/ingest.smk"
include: "rules/dataset.smk"
include: "rules/predictions.smk"
include: "rules/paper.smk"
include: "rules/figures.smk"
include: "rules/tables.smk"
include: "rules/studies.smk"
include: "rules/bench.smk"


rule all:
    default_target: True
    input:
        get_all_targets,
