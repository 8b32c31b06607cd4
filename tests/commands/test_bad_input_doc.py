"""docs/bad-input.md holds the bounds table generated from trainscale.schema.NUMERIC_BOUNDS, and
the published CSV's integer bounds are those same ranges."""

from __future__ import annotations

from pathlib import Path

from trainscale.published.csv import INTEGER_BOUNDS
from trainscale.schema import NUMERIC_BOUNDS
from trainscale.sim.inputs import bounds_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"


def test_the_docs_bounds_table_is_the_generated_one():
    text = DOC.read_text(encoding="utf-8")
    inside = text.split("<!-- bounds:start -->\n")[1].split("<!-- bounds:end -->")[0]
    assert inside == bounds_markdown(), (
        "regenerate the table: python -c 'from trainscale.sim.inputs import bounds_markdown; "
        "print(bounds_markdown())'"
    )


def test_every_bound_is_in_the_table():
    table = bounds_markdown()
    for name, bound in NUMERIC_BOUNDS.items():
        assert f"| `{name}` |" in table
        assert f"{bound.high:,.0f}" in table


def test_the_published_csv_uses_the_same_ranges():
    renamed = {"global_batch_seqs": "global_batch", "dp": "num_gpus"}
    for column, (low, high) in INTEGER_BOUNDS.items():
        bound = NUMERIC_BOUNDS[renamed.get(column, column)]
        assert (low, high) == (bound.low, bound.high), column
