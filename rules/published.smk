# Published measurements: normalised rows (results/published.parquet) and their predictions
# (results/validation.parquet).


# Published throughput rows in the dataset schema, observed value as tokens/s per GPU.
rule published_measurements:
    input:
        csv=config["published"],
        catalogues=CATALOGUES,
    output:
        published="results/published.parquet",
    log:
        "results/logs/published_measurements/published.log",
    benchmark:
        "results/benchmarks/published_measurements/published.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/published_measurements.py"


# Every published row predicted (observed, predicted, error) or rejected with its reason.
rule published_validation:
    input:
        csv=config["published"],
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        validation="results/validation.parquet",
    log:
        "results/logs/published_validation/validation.log",
    benchmark:
        "results/benchmarks/published_validation/validation.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    script:
        "../workflow/scripts/published_validation.py"
