# The reproduced paper (Fernandez et al. 2024): its claims reproduced with the paper setup
# (results/paper/claims.parquet) and their sensitivity to NCCL's latency scale
# (results/paper/claim_sensitivity.parquet). Tables claims and claim_sensitivity print them.


# Every claim recomputed with trainscale.paper.setup (not read from a study's results): about
# 50 simulations, including the ~40 plans of the model-parallel claims.
rule paper_claims:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        calibration=CALIBRATION,
        sensitivity="results/paper/claim_sensitivity.parquet",
    output:
        claims="results/paper/claims.parquet",
    log:
        "results/logs/paper_claims/claims.log",
    benchmark:
        "results/benchmarks/paper_claims/claims.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../workflow/scripts/paper_claims.py"


# Nine calibrations (one per pinned NCCL latency scale, the calibration's own among them), each
# refitted to the published measurements (trainscale.paper.sensitivity.claim_sensitivity).
rule claim_sensitivity:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        published=config["published"],
        calibration=CALIBRATION,
    output:
        sensitivity="results/paper/claim_sensitivity.parquet",
    log:
        "results/logs/claim_sensitivity/claim_sensitivity.log",
    benchmark:
        "results/benchmarks/claim_sensitivity/claim_sensitivity.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=15,
    script:
        "../workflow/scripts/claim_sensitivity.py"


# The paper setup's node energy per token and cost per million tokens against GPU count, beside
# the metered MLPerf power runs and their predictions (trainscale.paper.energy); the energy_bill
# figure draws it.
rule paper_energy:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        power=str(DATA_DIR / "published" / "power-measurements.csv"),
        calibration=CALIBRATION,
    output:
        energy="results/paper/energy.parquet",
    log:
        "results/logs/paper_energy/energy.log",
    benchmark:
        "results/benchmarks/paper_energy/energy.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../workflow/scripts/paper_energy.py"
