"""Tests of trainscale.tables.claims: results/paper/claims.parquet printed, with fabricated
reproduced values (nothing is simulated)."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.io.parquet import write_parquet
from trainscale.paper.claims import claims_table
from trainscale.schema import CLAIM_COLUMNS, CLAIMS_TABLE_COLUMNS, names
from trainscale.tables import render_table
from trainscale.tables.claims import render, value_text

# Values a reproduction might give; the paper's numbers are 37.22, 5.87, 59.67, 40.77 and 2-4.
REPRODUCED = {
    "throughput_drop_pct": 41.3312,
    "power_drop_pct": 5.87,
    "mfu_a100_pct": 64.0,
    "mfu_h100_pct": 36.0,
    "best_degree_llama2_7b": 2.0,
    "best_degree_llama2_70b": 8.0,
}


@pytest.fixture
def claims_parquet(tmp_path) -> str:
    """results/paper/claims.parquet as rule paper_claims writes it."""
    table = claims_table(REPRODUCED).assign(calibration_id="cal123", simulator_version="9.9")
    path = tmp_path / "claims.parquet"
    write_parquet(table, path, CLAIM_COLUMNS)
    return str(path)


def test_the_table_prints_the_claims_without_key_and_provenance(claims_parquet, tmp_path):
    csv, md, tex = render_table("claims", tmp_path / "claims", {"claims": claims_parquet})
    printed = pd.read_csv(csv)
    assert list(printed.columns) == names(CLAIMS_TABLE_COLUMNS)
    assert printed["holds"].tolist() == [True, True, True, True, True, False]
    assert "trainscale calibration cal123" in tex.read_text()
    assert "| 41.33 |" in md.read_text()


def test_model_parallel_values_print_as_integers(claims_parquet, tmp_path):
    assert value_text(2.0) == "2"
    assert value_text(41.3312) == "41.33"
    _, md, _ = render(tmp_path / "claims", pd.read_parquet(claims_parquet))
    lines = md.read_text().splitlines()
    degree_rows = [line for line in lines if "tp*pp" in line and "Model-parallel" in line]
    assert len(degree_rows) == 2
    for line in degree_rows:
        cells = [c.strip() for c in line.split("|")]
        assert "2.00" not in cells and "8.00" not in cells
        assert "2–4" in cells
    assert any("| 37.22 |" in line for line in lines)


def test_a_table_without_the_columns_is_refused(tmp_path):
    with pytest.raises(TrainscaleError, match=r"claims: missing column\(s\)"):
        render(tmp_path / "claims", pd.DataFrame({"claim": ["x"]}))
