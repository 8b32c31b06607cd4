# Figures: reports/figures/<name>.{pdf,png,svg}, one wildcard rule for every figure that
# trainscale.figures.FIGURES knows, drawn by workflow/scripts/figure_render.py through
# trainscale.figures.render_figure. Its inputs are what the registry says the figure reads
# (figure_inputs, rules/common.smk): result tables and the catalogue files it reads, which the
# script loads and passes in, so editing a catalogue reruns exactly the figures that read it. The PNG goes into the report with
# the figure's caption, workflow/report/figures/<name>.rst (a caption path cannot hold a
# wildcard: the rule's one caption file, workflow/report/figure.rst, prints params.caption). A
# figure drawn from a study needs config/studies/<study>.yaml listed in config["studies"].


rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf="reports/figures/{name}.pdf",
        png=report(
            "reports/figures/{name}.png",
            caption="../workflow/report/figure.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
        svg="reports/figures/{name}.svg",
    log:
        "results/logs/figure/{name}.log",
    benchmark:
        "results/benchmarks/figure/{name}.tsv"
    wildcard_constraints:
        name=FIGURE_NAMES,
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=report_caption("figure"),
    script:
        "../workflow/scripts/figure_render.py"
