"""Rule table: write table {name} from its named inputs and catalogue files (TABLES)."""

from trainscale.tables import TABLES, render_table
from trainscale.workflow import rule_script

name = snakemake.wildcards.name
stem = str(snakemake.output.csv).removesuffix(".csv")
with rule_script(snakemake) as rule:
    # The catalogue files the rule declares (Output.catalogue_files), loaded from those paths.
    catalogues = rule.catalogue_files(TABLES[name].catalogue_files())
    rule.wrote(render_table(name, stem, dict(snakemake.input.items()), catalogues))
