# Real runs: <runs_dir>/<run>/run.yaml + its logs -> results/measured/<run>.parquet (one row per
# job, dataset schema) and results/measured/<run>_steps.parquet (one row per logged step).
# get_measured_results() (rules/common.smk) lists one target per run folder with a run.yaml;
# a folder whose name cannot be a {run} wildcard (RUN_NAME) stops the workflow at start-up.
from trainscale.ingest.manifest import run_input_files


# Parse every log the manifest lists (src/trainscale/ingest/runs.py); a bad manifest or log fails
# the job with the file, line and key in its log, and writes nothing. Reads the GPU and model
# catalogues (names checked; peaks, TDP and shapes for MFU and the power check). With config
# ingest.strict, any warning (docs/ingest/checks.md) fails the job instead.
rule ingest_run:
    input:
        **catalogue_inputs("hardware", "models"),
        run_schema=schema_input("run"),
        manifest=f"{config['runs_dir']}/{{run}}/run.yaml",
        logs=lambda wildcards: run_input_files(
            f"{config['runs_dir']}/{wildcards.run}"
        )[1:],
    output:
        results="results/measured/{run}.parquet",
        steps="results/measured/{run}_steps.parquet",
    log:
        "results/logs/ingest_run/{run}.log",
    benchmark:
        "results/benchmarks/ingest_run/{run}.tsv"
    wildcard_constraints:
        run=RUN_NAME,
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        strict=config["ingest"]["strict"],
    script:
        "../workflow/scripts/ingest_run.py"
