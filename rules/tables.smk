# Tables: reports/tables/<name>.{csv,md,tex}, one rule per table, all written by
# workflow/scripts/table_render.py through trainscale.tables.render_table (inputs by name, as
# trainscale.tables.TABLES lists them). The CSV goes into the report with its caption.


rule table_hardware:
    input:
        catalogues=CATALOGUES,
    output:
        table_outputs("hardware"),
    log:
        "results/logs/table/hardware.log",
    benchmark:
        "results/benchmarks/table/hardware.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="hardware",
    script:
        "../workflow/scripts/table_render.py"


rule table_models:
    input:
        catalogues=CATALOGUES,
    output:
        table_outputs("models"),
    log:
        "results/logs/table/models.log",
    benchmark:
        "results/benchmarks/table/models.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="models",
    script:
        "../workflow/scripts/table_render.py"


# The claims are recomputed with trainscale.paper.setup (not read from a study's results).
rule table_claims:
    input:
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        table_outputs("claims"),
    log:
        "results/logs/table/claims.log",
    benchmark:
        "results/benchmarks/table/claims.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="claims",
    script:
        "../workflow/scripts/table_render.py"


# Nine calibrations (one per pinned NCCL latency scale): the claims' dependence on the one
# parameter the published data barely constrain (trainscale.tables.claim_sensitivity).
rule table_claim_sensitivity:
    input:
        published=config["published"],
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        table_outputs("claim_sensitivity"),
    log:
        "results/logs/table/claim_sensitivity.log",
    benchmark:
        "results/benchmarks/table/claim_sensitivity.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        name="claim_sensitivity",
    script:
        "../workflow/scripts/table_render.py"


rule table_scaling_fits:
    input:
        dataset="results/dataset",
    output:
        table_outputs("scaling_fits"),
    log:
        "results/logs/table/scaling_fits.log",
    benchmark:
        "results/benchmarks/table/scaling_fits.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        name="scaling_fits",
    script:
        "../workflow/scripts/table_render.py"


# Held-out error first (results/holdout.parquet), the in-sample error beside it; the published
# CSV gives the nccl-tests message sizes.
rule table_validation:
    input:
        validation="results/validation.parquet",
        holdout="results/holdout.parquet",
        published=config["published"],
        catalogues=CATALOGUES,
    output:
        table_outputs("validation"),
    log:
        "results/logs/table/validation.log",
    benchmark:
        "results/benchmarks/table/validation.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="validation",
    script:
        "../workflow/scripts/table_render.py"


rule table_best_plans:
    input:
        sim="results/sim/best_plan.parquet",
    output:
        table_outputs("best_plans"),
    log:
        "results/logs/table/best_plans.log",
    benchmark:
        "results/benchmarks/table/best_plans.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        name="best_plans",
    script:
        "../workflow/scripts/table_render.py"
