# Tables: reports/tables/<name>.{csv,md,tex}, one wildcard rule for every table that
# trainscale.tables.TABLES knows, written by workflow/scripts/table_render.py through
# trainscale.tables.render_table. Its inputs are what the registry says the table reads
# (table_inputs, rules/common.smk): result tables and the catalogue files it reads, which the
# script loads and passes in. The CSV goes into the report with the table's caption,
# workflow/report/tables/<name>.rst (printed as params.caption by workflow/report/table.rst).


rule table:
    input:
        unpack(table_inputs),
    output:
        csv=report(
            "reports/tables/{name}.csv",
            caption="../workflow/report/table.rst",
            category="Tables",
            labels={"table": "{name}"},
        ),
        md="reports/tables/{name}.md",
        tex="reports/tables/{name}.tex",
    log:
        "results/logs/table/{name}.log",
    benchmark:
        "results/benchmarks/table/{name}.tsv"
    wildcard_constraints:
        name=TABLE_NAMES,
    conda:
        "../environment.yml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        caption=report_caption("table"),
    script:
        "../workflow/scripts/table_render.py"
