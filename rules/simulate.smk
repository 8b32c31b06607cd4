# Study -> configuration table -> simulation in chunks -> one Parquet per study.


# Expand the study's grid; rows dropped by derive, filters or the validator go to rejects.
rule study_configurations:
    input:
        study="config/studies/{study}.yaml",
        schema=STUDY_SCHEMA,
        catalogues=CATALOGUES,
    output:
        configurations="results/studies/{study}/configurations.parquet",
        rejects="results/studies/{study}/rejects.parquet",
    log:
        "results/logs/study_configurations/{study}.log",
    benchmark:
        "results/benchmarks/study_configurations/{study}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/study_configurations.py"


# Simulate one chunk of the configuration table (rows_per_job rows; micro_batch "auto" resolved).
rule simulate_chunk:
    input:
        configurations=rules.study_configurations.output.configurations,
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        chunk="results/studies/{study}/chunks/{chunk}.parquet",
    log:
        "results/logs/simulate_chunk/{study}/{chunk}.log",
    benchmark:
        "results/benchmarks/simulate_chunk/{study}/{chunk}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        chunks=lambda wildcards: study_jobs(wildcards.study),
        filters=lambda wildcards: STUDIES[wildcards.study].filters,
    script:
        "../workflow/scripts/simulate_chunk.py"


# Concatenate a study's chunks, in grid order, into results/sim/<study>.parquet.
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
        mem_mb=2000,
        runtime=10,
    script:
        "../workflow/scripts/simulate_study.py"
