# Figures: reports/figures/<name>.{pdf,png,svg}, one rule per figure, all drawn by
# workflow/scripts/figure_render.py through trainscale.figures.render_figure (inputs by name, as
# trainscale.figures.FIGURES lists them). The PNG goes into the report with its caption. A figure
# drawn from a study needs config/studies/<study>.yaml listed in config["studies"].


rule figure_collective_bandwidth:
    input:
        collectives=config["published"],
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        figure_outputs("collective_bandwidth"),
    log:
        "results/logs/figure/collective_bandwidth.log",
    benchmark:
        "results/benchmarks/figure/collective_bandwidth.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="collective_bandwidth",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_collective_scaling:
    input:
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        figure_outputs("collective_scaling"),
    log:
        "results/logs/figure/collective_scaling.log",
    benchmark:
        "results/benchmarks/figure/collective_scaling.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="collective_scaling",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_fsdp_scaleout:
    input:
        sim="results/sim/fsdp_scaleout.parquet",
    output:
        figure_outputs("fsdp_scaleout"),
    log:
        "results/logs/figure/fsdp_scaleout.log",
    benchmark:
        "results/benchmarks/figure/fsdp_scaleout.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="fsdp_scaleout",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_model_parallel:
    input:
        sim="results/sim/model_parallel.parquet",
    output:
        figure_outputs("model_parallel"),
    log:
        "results/logs/figure/model_parallel.log",
    benchmark:
        "results/benchmarks/figure/model_parallel.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="model_parallel",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_hardware_generations:
    input:
        sim="results/sim/hardware_generations.parquet",
    output:
        figure_outputs("hardware_generations"),
    log:
        "results/logs/figure/hardware_generations.log",
    benchmark:
        "results/benchmarks/figure/hardware_generations.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="hardware_generations",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_power_efficiency:
    input:
        sim="results/sim/power_efficiency.parquet",
    output:
        figure_outputs("power_efficiency"),
    log:
        "results/logs/figure/power_efficiency.log",
    benchmark:
        "results/benchmarks/figure/power_efficiency.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="power_efficiency",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_context_length:
    input:
        sim="results/sim/context_length.parquet",
    output:
        figure_outputs("context_length"),
    log:
        "results/logs/figure/context_length.log",
    benchmark:
        "results/benchmarks/figure/context_length.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="context_length",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_compute_per_gpu:
    input:
        sim="results/sim/compute_per_gpu.parquet",
    output:
        figure_outputs("compute_per_gpu"),
    log:
        "results/logs/figure/compute_per_gpu.log",
    benchmark:
        "results/benchmarks/figure/compute_per_gpu.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="compute_per_gpu",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_marginal_returns:
    input:
        sim="results/sim/fsdp_scaleout.parquet",
    output:
        figure_outputs("marginal_returns"),
    log:
        "results/logs/figure/marginal_returns.log",
    benchmark:
        "results/benchmarks/figure/marginal_returns.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="marginal_returns",
    script:
        "../workflow/scripts/figure_render.py"


# Held-out predictions first (results/holdout.parquet); the in-sample error in the note.
rule figure_sim_vs_published:
    input:
        holdout="results/holdout.parquet",
        validation="results/validation.parquet",
    output:
        figure_outputs("sim_vs_published"),
    log:
        "results/logs/figure/sim_vs_published.log",
    benchmark:
        "results/benchmarks/figure/sim_vs_published.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="sim_vs_published",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_global_batch_inference:
    input:
        sim="results/sim/global_batch_inference.parquet",
    output:
        figure_outputs("global_batch_inference"),
    log:
        "results/logs/figure/global_batch_inference.log",
    benchmark:
        "results/benchmarks/figure/global_batch_inference.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        name="global_batch_inference",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_best_plan:
    input:
        sim="results/sim/best_plan.parquet",
    output:
        figure_outputs("best_plan"),
    log:
        "results/logs/figure/best_plan.log",
    benchmark:
        "results/benchmarks/figure/best_plan.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        name="best_plan",
    script:
        "../workflow/scripts/figure_render.py"


rule figure_sim_vs_measured:
    input:
        dataset="results/dataset",
        catalogues=[*CATALOGUES, CALIBRATION],
    output:
        figure_outputs("sim_vs_measured"),
    log:
        "results/logs/figure/sim_vs_measured.log",
    benchmark:
        "results/benchmarks/figure/sim_vs_measured.tsv"
    conda:
        "../environment.yml"
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        name="sim_vs_measured",
    script:
        "../workflow/scripts/figure_render.py"
