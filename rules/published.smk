# Published measurements: normalised rows (results/published.parquet), their predictions by the
# shipped calibration (results/validation.parquet, in sample) and by fits that left each row's
# source out (results/holdout.parquet, held out).


# Published throughput rows in the dataset schema, observed value as tokens/s per GPU. Reads the
# hardware (physical limits), models (shapes) and frameworks (configurations resolved as the
# simulator resolves them) catalogues; it simulates nothing, so neither nccl.yaml nor the
# calibration.
rule published_measurements:
    input:
        **catalogue_inputs("hardware", "models", "frameworks"),
        **PUBLISHED_SOURCES,
        csv=config["published"],
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


# Every published row predicted (observed, predicted, error) or rejected with its reason: the four
# catalogues and the shipped calibration.
rule published_validation:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        csv=config["published"],
        calibration=CALIBRATION,
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


# Every published throughput row predicted by a fit that left its whole source out (one fit
# per source, about a minute), beside the shipped calibration it is compared with (the fits start
# from the parameters' defaults; the shipped file gives the calibration_id the rows record).
rule published_holdout:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        csv=config["published"],
        calibration=CALIBRATION,
    output:
        holdout="results/holdout.parquet",
    log:
        "results/logs/published_holdout/holdout.log",
    benchmark:
        "results/benchmarks/published_holdout/holdout.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=lambda wildcards, attempt: 20 * attempt,
    script:
        "../workflow/scripts/published_holdout.py"
