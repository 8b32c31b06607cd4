"""Bad input gives an error naming the row and the column, and what is allowed."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale import predict
from trainscale.errors import ConfigurationError
from trainscale.sim.simulate import predict_with_rejects

GOOD = {
    "model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 1, "pp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


def _error(**overrides: object) -> ConfigurationError:
    frame = pd.DataFrame([GOOD, {**GOOD, **overrides}])
    with pytest.raises(ConfigurationError) as info:
        predict(frame, origin="configs.csv")
    return info.value


@pytest.mark.parametrize(
    ("overrides", "column", "fragment"),
    [
        (
            {"gpu": "a100"},
            "gpu",
            "unknown GPU 'a100' (did you mean 'a100-sxm-80gb'?); valid: a100-sxm-40gb, "
            "a100-sxm-80gb, a800-sxm-80gb, b200",
        ),
        (
            {"model": "llama9"},
            "model",
            "unknown model 'llama9'; valid: deepseek-v2, deepseek-v3, gpt-oss-120b",
        ),
        ({"tp": 3}, "tp", "tp 3 does not divide heads 32"),
        ({"num_gpus": 100, "tp": 8}, "num_gpus",
         "num_gpus 100 is not divisible by tp·pp·cp = 8·1·1 = 8"),
        ({"global_batch": 100}, "global_batch",
         "global_batch 100 is not divisible by dp·micro_batch = 64·1 = 64"),
        ({"num_gpus": -8}, "num_gpus", "-8 is not a positive integer"),
        ({"micro_batch": 0}, "micro_batch", "0 is not a positive integer"),
        ({"seq_len": 2.5}, "seq_len", "2.5 is not a positive integer"),
        ({"sharding": "zero3"}, "sharding", "allowed: ddp, zero1, zero2, fsdp, hsdp"),
        ({"recompute": "some"}, "recompute", "allowed: none, selective, full"),
        ({"precision": "fp8", "gpu": "a100-sxm-80gb"}, "precision", "has no FP8 tensor cores"),
        ({"cp": 3, "num_gpus": 192}, "seq_len", "not divisible by 2·cp = 6"),
        ({"vpp": 2}, "vpp", "vpp 2 needs pp > 1"),
        ({"system": "dgx-z"}, "system", "unknown system 'dgx-z'; valid: "),
        ({"system": "dgx-a100"}, "system",
         "system 'dgx-a100' holds a100-sxm-80gb, not h100-sxm-80gb"),
        ({"mlp": "relu"}, "mlp", "'relu' is not allowed; allowed: swiglu, gelu"),
        ({"sequence_parallel": "maybe"}, "sequence_parallel",
         "'maybe' is not allowed; allowed: true, false"),
    ],
)  # fmt: skip
def test_each_invalid_value_names_row_and_column(
    overrides: dict, column: str, fragment: str
) -> None:
    error = _error(**overrides)
    assert error.problems[0][0] == 1
    assert error.problems[0][1] == column
    assert fragment in str(error)
    assert "configs.csv" in str(error)
    assert "row 1, column" in str(error)


def test_missing_columns_are_named() -> None:
    frame = pd.DataFrame([{k: v for k, v in GOOD.items() if k not in ("gpu", "seq_len")}])
    with pytest.raises(ConfigurationError, match="seq_len, gpu"):
        predict(frame)


def test_shape_columns_are_required_without_a_model() -> None:
    row = {k: v for k, v in GOOD.items() if k != "model"}
    with pytest.raises(ConfigurationError, match="missing column"):
        predict(pd.DataFrame([row]))
    partial = {**row, "model": "", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4,
               "ffn": 1024, "vocab": 1000}  # fmt: skip
    with pytest.raises(ConfigurationError, match="column 'mlp'"):
        predict(pd.DataFrame([partial]))


def test_every_invalid_row_is_listed_together() -> None:
    frame = pd.DataFrame([{**GOOD, "gpu": "x"}, GOOD, {**GOOD, "tp": 5, "sharding": "y"}])
    with pytest.raises(ConfigurationError) as info:
        predict(frame)
    assert sorted((row, col) for row, col, _ in info.value.problems) == [
        (0, "gpu"),
        (2, "sharding"),
        (2, "tp"),
    ]


def test_skip_invalid_returns_rejects_with_reasons_and_keeps_other_columns() -> None:
    frame = pd.DataFrame([{**GOOD, "id": "a"}, {**GOOD, "id": "b", "gpu": "tpu"}])
    results, rejects = predict_with_rejects(frame)
    assert list(results["id"]) == ["a"]
    assert list(rejects["id"]) == ["b"]
    assert rejects.iloc[0]["column"] == "gpu"
    assert "unknown GPU 'tpu'" in rejects.iloc[0]["reason"]


def test_explicit_shape_columns_override_the_catalogue() -> None:
    base = predict(pd.DataFrame([GOOD])).iloc[0]
    fewer = predict(pd.DataFrame([{**GOOD, "layers": 16}])).iloc[0]
    assert fewer["layers"] == 16
    assert fewer["step_time_s"] < base["step_time_s"]


def test_boolean_columns_read_words_numbers_and_empty_cells() -> None:
    """An optional boolean column takes true/false words, 1 and 0 as text or numbers, and an
    empty cell for the default, in one column."""
    spellings = ["yes", "No", " TRUE ", "f", "1", "0.0", 1.0, 0, None, ""]
    frame = pd.DataFrame([{**GOOD, "tp": 2, "sequence_parallel": s} for s in spellings])
    out = predict(frame)
    expected = [True, False, True, False, True, False, True, False, True, True]  # empty: tp > 1
    plain = predict(pd.DataFrame([{**GOOD, "tp": 2, "sequence_parallel": e} for e in expected]))
    assert out["step_time_s"].tolist() == plain["step_time_s"].tolist()
    on, off = plain["step_time_s"].iloc[0], plain["step_time_s"].iloc[1]
    assert on != off  # the column changes the prediction, so the comparison can fail
