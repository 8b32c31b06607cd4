# Bench sweeps on a SLURM cluster (not part of the default target: they need GPUs).
# config/benches/<sweep>.yaml (src/trainscale/bench/sweep.py) -> one SLURM job per point, each a
# `trainscale bench` run folder results/bench/<sweep>/<sweep>_<point>/ (run.yaml, logs, traces),
# then results/bench/<sweep>.parquet with their measured rows. Run with
#   snakemake results/bench/<sweep>.parquet --profile profiles/slurm-bench
# Copy a run folder to data/runs/ to put it into the dataset of the default target.
from pathlib import Path

from trainscale.bench.sweep import point_of, sweep_run_dirs
from trainscale.paths import data_dir, schema_file

# The catalogue files the harness and the collection read, with the JSON Schemas they are checked
# against, named here rather than through rules/common.smk's catalogue_inputs() so that this file
# also works included on its own (a site's bench-only Snakefile, and the SLURM bench test).
BENCH_CATALOGUES = {
    name: str(data_dir() / f"{name}.yaml") for name in ("hardware", "models")
} | {f"{name}_schema": str(schema_file(name)) for name in ("hardware", "models")}


# Collecting the rows takes a second: no SLURM job for it.
localrules:
    bench_collect,


# One point: workflow/scripts/bench_run.sh runs `srun torchrun` on every node of the SLURM job
# (torchrun --standalone outside SLURM). The harness reads the model (shape) and hardware (peak
# for MFU) catalogues through TRAINSCALE_DATA, which points at the files declared here.
#: The point's shell script, found from this file (not the main Snakefile), so a site's bench-only
#: Snakefile that includes rules/bench.smk by path runs it too.
BENCH_RUN_SCRIPT = str(
    Path(workflow.current_basedir).parent / "workflow" / "scripts" / "bench_run.sh"
)


rule bench_run:
    input:
        **BENCH_CATALOGUES,
        sweep="config/benches/{sweep}.yaml",
    output:
        run_dir=directory("results/bench/{sweep}/{sweep}_{point}"),
    log:
        "results/logs/bench_run/{sweep}/{point}.log",
    benchmark:
        "results/benchmarks/bench_run/{sweep}/{point}.tsv"
    wildcard_constraints:
        sweep=r"[A-Za-z0-9][A-Za-z0-9_-]*",
        point=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    conda:
        "../environment.yml"
    threads: lambda wildcards: point_of(wildcards).cpus_per_node
    resources:
        nodes=lambda wildcards: point_of(wildcards).nodes,
        tasks=lambda wildcards: point_of(wildcards).nodes,
        cpus_per_task=lambda wildcards: point_of(wildcards).cpus_per_node,
        mem_mb=lambda wildcards: point_of(wildcards).mem_mb,
        runtime=lambda wildcards: point_of(wildcards).runtime_min,
        slurm_extra=lambda wildcards: point_of(wildcards).slurm_extra,
    params:
        nproc=lambda wildcards: point_of(wildcards).procs_per_node,
        bench=lambda wildcards: point_of(wildcards).args,
        script=BENCH_RUN_SCRIPT,
    shell:
        "bash {params.script:q} {params.nproc} {resources.cpus_per_task} {output.run_dir:q} {log:q}"
        " {params.bench}"


# A sweep's measured rows, one per point, in the dataset schema (ingested with the GPU and model
# catalogues, as rule ingest_run).
rule bench_collect:
    input:
        **BENCH_CATALOGUES,
        run_schema=str(schema_file("run")),
        runs=lambda wildcards: sweep_run_dirs(f"config/benches/{wildcards.sweep}.yaml"),
    output:
        results="results/bench/{sweep}.parquet",
    log:
        "results/logs/bench_collect/{sweep}.log",
    benchmark:
        "results/benchmarks/bench_collect/{sweep}.tsv"
    wildcard_constraints:
        sweep=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../workflow/scripts/bench_collect.py"
