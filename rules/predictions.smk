# What the simulator predicts for the figures besides the studies, so that no figure runs it:
# the collective cost model's curves (results/collectives.parquet) and each measured run's
# prediction (results/sim_vs_measured.parquet).


# Time and bus bandwidth of AllReduce, AllGather and ReduceScatter for every catalogue GPU in
# its default system: 1 KiB to 16 GiB and each catalogue model's per-layer message, 1 to 512
# nodes, with and without NCCL's latencies (trainscale.sim.collective_curves).
rule collective_curves:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        calibration=CALIBRATION,
    output:
        curves="results/collectives.parquet",
    log:
        "results/logs/collective_curves/collectives.log",
    benchmark:
        "results/benchmarks/collective_curves/collectives.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../workflow/scripts/collective_curves.py"


# Every measured row of the dataset predicted for the same configuration, or the reason it
# cannot be (a CPU run, a manifest without a training configuration); the run manifests give
# each run's purpose and which of its logs are power logs.
rule sim_vs_measured:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        dataset="results/dataset",
        calibration=CALIBRATION,
        manifests=[f"{config['runs_dir']}/{run}/run.yaml" for run in RUNS],
        run_schema=schema_input("run"),
    output:
        table="results/sim_vs_measured.parquet",
    log:
        "results/logs/sim_vs_measured/sim_vs_measured.log",
    benchmark:
        "results/benchmarks/sim_vs_measured/sim_vs_measured.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../workflow/scripts/sim_vs_measured.py"
