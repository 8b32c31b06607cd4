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
        mem_mb=dataset_mem_mb,
        runtime=10,
    script:
        "../workflow/scripts/dataset_write.py"
