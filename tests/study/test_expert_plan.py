"""A study's plan names the expert layout (ep, etp) where its rows hold one, and only there."""

from __future__ import annotations

import pandas as pd

from trainscale.study.report import PLAN_COLUMNS, expert_rows, has_experts, plan_columns
from trainscale.tables.study_points import plan_text

ROW = {"framework": "megatron", "tp": 2, "pp": 4, "cp": 1, "vpp": 1, "ep": 8, "etp": 1,
       "sharding": "zero1", "recompute": "none", "micro_batch": 1}  # fmt: skip


def test_a_dense_study_keeps_its_plan_columns() -> None:
    dense = pd.DataFrame([{**ROW, "ep": 1, "etp": 2}])
    assert not has_experts(dense)
    assert plan_columns(dense) == PLAN_COLUMNS
    assert "ep" not in plan_text(ROW)


def test_an_expert_layout_is_named_after_the_pipeline() -> None:
    rows = pd.DataFrame([{**ROW, "ep": 1, "etp": 2}, ROW])
    assert has_experts(rows)
    assert plan_columns(rows)[:7] == ("framework", "tp", "pp", "cp", "vpp", "ep", "etp")
    assert plan_text(ROW, experts=True) == (
        "megatron · tp 2 · pp 4 · cp 1 · vpp 1 · ep 8 · etp 1 · zero1 · none · mb 1"
    )
    # expert tensor parallelism other than tp is a layout too, even at ep 1
    assert has_experts(pd.DataFrame([{**ROW, "ep": 1, "etp": 1}]))


def test_a_dense_model_beside_experts_shows_no_expert_layout() -> None:
    rows = pd.DataFrame(
        [{**ROW, "model": "llama3-70b", "ep": 1, "etp": 2}, {**ROW, "model": "deepseek-v3"},
         {**ROW, "model": "deepseek-v3", "ep": 1, "etp": 2}]
    )  # fmt: skip
    assert expert_rows(rows).tolist() == [False, True, True]
    # judged on the rows given as ``among`` (a study's simulated rows), not the selected ones
    assert expert_rows(rows.iloc[[2]], rows).tolist() == [True]
    assert expert_rows(rows.iloc[[2]]).tolist() == [False]
