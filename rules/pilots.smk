# Pilot validation: every published scaling series calibrated on its smallest GPU count (a base
# fitted without its source), predicting its larger counts (results/pilots.parquet). Table pilots
# prints it; trainscale validate --pilots prints the same numbers.


# The four catalogues, the published measurements and the shipped calibration (power parameter and
# calibration_id of the bases); one fit per source (about 15 s in all).
rule published_pilots:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        csv=config["published"],
        calibration=CALIBRATION,
    output:
        pilots="results/pilots.parquet",
    log:
        "results/logs/published_pilots/pilots.log",
    benchmark:
        "results/benchmarks/published_pilots/pilots.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=lambda wildcards, attempt: 20 * attempt,
    script:
        "../workflow/scripts/published_pilots.py"
