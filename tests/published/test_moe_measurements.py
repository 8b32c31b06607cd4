"""The published mixture-of-experts runs (data/published/moe-measurements.csv) normalised into
the published throughput frame, with their FLOP conventions, and bad rows named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.paths import data_dir
from trainscale.published.moe import MOE_PLAN_COLUMNS, load_moe_measurements, routing

SHIPPED = data_dir() / "published" / "moe-measurements.csv"


@pytest.fixture(scope="module")
def rows(catalogue) -> pd.DataFrame:
    return load_moe_measurements(
        SHIPPED,
        hardware=catalogue.hardware,
        models=catalogue.models,
        frameworks=catalogue.framework_keys,
    )


def _load(path: Path, catalogue) -> pd.DataFrame:
    return load_moe_measurements(
        path,
        hardware=catalogue.hardware,
        models=catalogue.models,
        frameworks=catalogue.framework_keys,
    )


def _damaged(tmp_path: Path, row: int, column: str, value: str) -> Path:
    """A copy of the shipped file (and its rules) with one cell changed."""
    table = pd.read_csv(SHIPPED, dtype=str, keep_default_na=False)
    table.loc[row, column] = value
    path = tmp_path / "moe-measurements.csv"
    table.to_csv(path, index=False)
    shutil.copy(SHIPPED.parent / "moe-sources.yaml", tmp_path / "moe-sources.yaml")
    return path


def test_every_row_is_normalised_under_four_sources(rows: pd.DataFrame, published) -> None:
    assert len(rows) == 45
    assert rows["citation"].nunique() == 4
    dense = set(published.throughput.columns) - {"layers", "hidden", "heads", "vocab",
                                                   "kv_heads", "ffn", "mlp"}  # fmt: skip
    assert dense <= set(rows.columns)
    assert set(MOE_PLAN_COLUMNS) <= set(rows.columns)
    assert set(rows["moe_routing"]) == {"balanced", "dropless", "capacity"}
    assert set(rows["gpu"]) == {"h100-sxm-80gb", "b200"}


@pytest.mark.parametrize(
    ("line", "metric", "convention", "expected"),
    [
        # Parallel Folding Table 3, Mixtral 8x22B TP2/EP8/PP8: 0.493 x 989.5e12 / 250.65e9
        (3, "mfu", "model", 1946.2),
        # ModelZoo Qwen3-235B cross-node EP: 2048 x 4096 / (19.7 s x 256)
        (29, "step_time_s", "direct", 1663.4),
        # ModelZoo long context, 16K: 295e12 / 204.81e9 (causal-halved attention)
        (34, "tflops_per_gpu", "causal", 1440.4),
        # Megatron-LM README v0.8: 438e12 / 82.93e9 (2024 formula, attention not halved)
        (40, "tflops_per_gpu", "model", 5281.7),
        # torchtitan PR: tokens/s per GPU as printed
        (42, "tokens_per_s_per_gpu", "direct", 14796.0),
    ],
)
def test_each_metric_is_converted_with_its_source_convention(
    rows: pd.DataFrame, line: int, metric: str, convention: str, expected: float
) -> None:
    row = rows.set_index("csv_row").loc[line]
    assert (row["published_metric"], row["flop_convention"]) == (metric, convention)
    assert row["observed_tokens_per_s_per_gpu"] == pytest.approx(expected, rel=1e-3)


def test_routing_text() -> None:
    assert routing("1.0 with padding (--moe-expert-capacity-factor 1.0)") == ("capacity", 1.0)
    assert routing("dropless (natural routing)")[0] == "dropless"
    assert routing("dropless, forced balance (debug.moe_force_load_balance = true)")[0] == (
        "balanced"
    )
    assert routing("top-k with aux loss") is None


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("num_experts", "16", "differs from catalogue model mixtral-8x22b's 8"),
        ("measured_tokens_per_s_per_gpu", "2500", "gives 1827.8"),
        ("dp", "16", "is not num_gpus / \\(tp·pp·cp\\)"),
        ("capacity_factor", "aux-loss routing", "expected a capacity factor"),
        ("source", "a blog", "matches 0 entries of moe-sources.yaml"),
        ("model", "Mixtral 8x44B", "names no mixture-of-experts model"),
        ("token_dispatcher", "nccl", "first word must be one of alltoall"),
    ],
)
def test_a_bad_row_is_named_with_its_column(
    tmp_path: Path, catalogue, column: str, value: str, message: str
) -> None:
    path = _damaged(tmp_path, 0, column, value)
    with pytest.raises(ConfigurationError, match=message) as caught:
        _load(path, catalogue)
    assert caught.value.problems[0][:2] == (0, column)
    assert str(path) in str(caught.value)


def test_a_file_without_a_column_is_refused(tmp_path: Path, catalogue) -> None:
    table = pd.read_csv(SHIPPED, dtype=str, keep_default_na=False).drop(columns=["ep"])
    path = tmp_path / "moe-measurements.csv"
    table.to_csv(path, index=False)
    shutil.copy(SHIPPED.parent / "moe-sources.yaml", tmp_path / "moe-sources.yaml")
    with pytest.raises(InputFileError, match="missing column\\(s\\) ep"):
        _load(path, catalogue)


def test_an_unstated_virtual_pipeline_reads_by_the_source_rule(rows: pd.DataFrame) -> None:
    by_line = rows.set_index("csv_row")
    # Parallel Folding (vpp blank, unstated_vpp one_layer_per_stage): Mixtral 8x22B's 56 layers
    # over pp 8 -> vpp 7, the ModelZoo's VPP for the same mapping; Llama3-8x70B 80 / pp 16 -> 5
    assert by_line.loc[3, "vpp"] == 7
    assert "vpp 7, one layer per virtual stage (56 layers / pp 8)" in by_line.loc[3, "assumptions"]
    assert by_line.loc[11, "vpp"] == 80 // 16
    # no pipeline: nothing to interleave
    assert by_line.loc[4, "vpp"] == 1
    assert "virtual pipeline not stated" not in by_line.loc[4, "assumptions"]
    # a stated value is kept (ModelZoo Mixtral-8x22B: VPP 7 printed; Megatron-LM README: 8)
    assert by_line.loc[40, "vpp"] == 8
    assert "virtual pipeline not stated" not in by_line.loc[40, "assumptions"]


def test_a_source_without_the_rule_keeps_megatrons_default(tmp_path: Path, catalogue) -> None:
    path = _damaged(tmp_path, 0, "notes", "")
    rules = (tmp_path / "moe-sources.yaml").read_text(encoding="utf-8")
    (tmp_path / "moe-sources.yaml").write_text(
        rules.replace("unstated_vpp: one_layer_per_stage", "unstated_vpp: none"), encoding="utf-8"
    )
    assert set(_load(path, catalogue).query("pp > 1 and csv_row <= 28")["vpp"]) == {1}


def test_an_unknown_vpp_rule_is_refused(tmp_path: Path, catalogue) -> None:
    path = _damaged(tmp_path, 0, "notes", "")
    rules = (tmp_path / "moe-sources.yaml").read_text(encoding="utf-8")
    (tmp_path / "moe-sources.yaml").write_text(
        rules.replace("unstated_vpp: one_layer_per_stage", "unstated_vpp: guess"), encoding="utf-8"
    )
    with pytest.raises(InputFileError, match="unstated_vpp: 'guess' not allowed; one of none"):
        _load(path, catalogue)
