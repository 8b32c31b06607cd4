"""Tests of trainscale.tables.validation."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.tables.validation import VALIDATION_TABLE_COLUMNS, validation_table


def test_errors_rejects_and_all_rows_per_quantity(validation_rows):
    table = validation_table(validation_rows)
    assert (
        tuple(table.columns)
        == VALIDATION_TABLE_COLUMNS
        == (
            "quantity",
            "source",
            "rows",
            "rejected",
            "mape_pct",
            "median_ape_pct",
            "max_ape_pct",
        )
    )
    tput = table[table["quantity"] == "tokens/s per GPU"].set_index("source")
    assert tput.index.tolist() == ["A", "B", "C", "all"]
    assert tput["rows"].tolist() == [2, 1, 0, 3]
    assert tput["rejected"].tolist() == [0, 1, 1, 2]
    assert tput.loc["A", "mape_pct"] == pytest.approx(10.0)
    assert tput.loc["B", "max_ape_pct"] == pytest.approx(50.0)
    assert tput.loc["all", "mape_pct"] == pytest.approx(70.0 / 3)
    assert pd.isna(tput.loc["C", "mape_pct"])
    nccl = table[table["quantity"].str.startswith("nccl-tests")]
    assert nccl["source"].tolist() == ["N", "all"]
    assert nccl["mape_pct"].tolist() == pytest.approx([5.0, 5.0])


def test_accepts_the_throughput_table_of_validate_published():
    rows = pd.DataFrame({"citation": ["A", "A"], "ape_pct": [10.0, 30.0]})
    table = validation_table(rows)
    assert table["source"].tolist() == ["A", "all"]
    assert table["mape_pct"].tolist() == pytest.approx([20.0, 20.0])
    assert table["rejected"].tolist() == [0, 0]
