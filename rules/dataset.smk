# results/dataset: simulated, published and measured rows in the one result schema.


# Hive-partitioned by source and study (source=<s>/study=<t>/part-0.parquet), zstd.
rule dataset:
    input:
        sim=get_sim_results(),
        published=rules.published_measurements.output.published,
        measured=get_measured_results(),
    output:
        dataset=directory("results/dataset"),
    log:
        "results/logs/dataset/dataset.log",
    benchmark:
        "results/benchmarks/dataset/dataset.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        # Streamed: one 65,536-row batch of a study and one row group in memory, whatever the
        # study's size (max_rss 0.4 GB at 453k rows, see README "Large sweeps"); 2 GB headroom.
        mem_mb=2000,
        runtime=10,
    script:
        "../workflow/scripts/dataset_write.py"
