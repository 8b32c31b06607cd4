# Study -> configuration chunks (checkpoint) -> simulation, one job per chunk -> one Parquet per
# study.


# Expand the study's grid block by block (never the whole grid in memory), drop rows by derive,
# filters, the validator and fits_memory, and write one configuration file per simulate job
# (rows_per_job kept rows each) plus the chunk count. A checkpoint: the number of simulate jobs
# follows the rows that survive, which is known only once this job has run. A study with no row
# left fails here, naming the file and the filters; one that loses more than half its rows
# prints a warning (also in the log). Reads all four catalogues (the study's names are checked
# against hardware and models; fits_memory and micro_batch "auto" simulate) and the calibration.
checkpoint study_configurations:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        study="config/studies/{study}.yaml",
        schema=STUDY_SCHEMA,
        calibration=lambda wildcards: study_calibration(wildcards.study),
    output:
        configurations=directory("results/studies/{study}/configurations"),
        rejects="results/studies/{study}/rejects.parquet",
        counts="results/studies/{study}/chunk_counts.json",
    log:
        "results/logs/study_configurations/{study}.log",
    benchmark:
        "results/benchmarks/study_configurations/{study}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=lambda wildcards: configurations_mem_mb(wildcards.study),
        runtime=lambda wildcards: configurations_runtime(wildcards.study),
    params:
        rows_per_job=lambda wildcards: study_rows_per_job(wildcards.study),
    script:
        "../workflow/scripts/study_configurations.py"


# Simulate one chunk: its own configuration file only (micro_batch "auto" resolved), with the
# four catalogues and the study's calibration (its calibration: key, else
# data/calibration.yaml). The chunk is temporary: it is deleted once the study's results table
# holds it.
rule simulate_chunk:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        configurations="results/studies/{study}/configurations/{chunk}.parquet",
        calibration=lambda wildcards: study_calibration(wildcards.study),
    output:
        chunk=temp("results/studies/{study}/chunks/{chunk}.parquet"),
    log:
        "results/logs/simulate_chunk/{study}/{chunk}.log",
    benchmark:
        "results/benchmarks/simulate_chunk/{study}/{chunk}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=lambda wildcards: chunk_mem_mb(wildcards.study),
        runtime=30,
    params:
        filters=lambda wildcards: STUDIES[wildcards.study].filters,
    script:
        "../workflow/scripts/simulate_chunk.py"


# Append a study's chunks, in grid order, into results/sim/<study>.parquet (one chunk in memory
# at a time).
rule simulate_study:
    input:
        chunks=get_study_chunks,
    output:
        results="results/sim/{study}.parquet",
    log:
        "results/logs/simulate_study/{study}.log",
    benchmark:
        "results/benchmarks/simulate_study/{study}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=lambda wildcards: chunk_mem_mb(wildcards.study),
        runtime=10,
    script:
        "../workflow/scripts/simulate_study.py"
