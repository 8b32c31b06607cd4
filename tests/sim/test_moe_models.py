"""Mixture-of-experts and newer-attention models in the catalogue: their derived parameter counts
against the published ones, the catalogue's checks, and that they are never predicted as dense."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale import predict
from trainscale.commands.catalogue import catalogue_table
from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.model.counts import model_flops_per_token
from trainscale.sim.model.flops import model_flops_per_token as dense_flops_per_token
from trainscale.sim.model.params import total_params
from trainscale.sim.model.shape import load_models

#: model -> (published total, published active, where, the active convention): "embedding" counts
#: the input embedding and the LM head (Mixtral, Qwen, DeepSeek, Kimi), "head" only the LM head
#: (the gpt-oss model card, Table 1), "readme" the active matmul weights computed in
#: data/published/moe-README.md for the research variants (no published count), None: no
#: published active count (Grok-1).
PUBLISHED = {
    "mixtral-8x7b": (46.7e9, 12.9e9, "arXiv 2401.04088 Sec 2.1", "embedding"),
    "mixtral-8x22b": (141e9, 39e9, "mistral.ai/news/mixtral-8x22b", "embedding"),
    "qwen2-57b-a14b": (57e9, 14e9, "arXiv 2407.10671 Table 1", "embedding"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, "Qwen3-30B-A3B model card", "embedding"),
    "qwen3-235b-a22b": (235e9, 22e9, "Qwen3-235B-A22B model card", "embedding"),
    "deepseek-v2": (236e9, 21e9, "arXiv 2405.04434 abstract", "embedding"),
    "deepseek-v3": (671e9, 37e9, "arXiv 2412.19437 abstract", "embedding"),
    "kimi-k2": (1.04e12, 32.6e9, "arXiv 2507.20534", "embedding"),
    "gpt-oss-20b": (20.91e9, 3.61e9, "gpt-oss model card Table 1", "head"),
    "gpt-oss-120b": (116.83e9, 5.13e9, "gpt-oss model card Table 1", "head"),
    "grok-1": (314e9, None, "github.com/xai-org/grok-1 README", None),
    "mixtral-8x22b-g8t8": (140.6e9, 22.045e9, "moe-README.md (computed)", "readme"),
    "llama3-8x70b": (465.2e9, 125.873e9, "moe-README.md (computed)", "readme"),
}


@pytest.fixture(scope="module")
def models():
    return load_models()


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_total_and_active_params_match_the_published_ones(models, key: str) -> None:
    total, active, _, convention = PUBLISHED[key]
    m = models[key]
    assert m.params == pytest.approx(total, rel=0.02)
    if convention is None:
        # Grok-1: 2 of 8 experts per token; everything else is shared by every token.
        experts = m.layers * m.moe.num_experts * 3 * m.hidden * m.moe.expert_ffn
        assert m.active_params == m.params - experts * 6 / 8
        return
    derived = {
        "embedding": m.active_params,
        "head": m.active_params - m.vocab * m.hidden,
        # the README's N_act: no input embedding, no norms, no router
        "readme": m.active_params
        - m.vocab * m.hidden
        - m.layers * (2 * m.hidden)
        - m.hidden
        - m.layers * m.hidden * m.moe.num_experts,
    }[convention]
    assert derived == pytest.approx(active, rel=0.02)


def test_deepseek_v3_is_671b_with_37b_active(models) -> None:
    v3 = models["deepseek-v3"]
    assert round(v3.params / 1e9) == 671
    # 37.55B with the input embedding, 36.63B without: "37B activated" either way (within 2 %)
    assert v3.active_params == pytest.approx(37e9, rel=0.015)
    assert v3.active_params - v3.vocab * v3.hidden == pytest.approx(37e9, rel=0.015)
    assert (v3.moe.dense_layers, v3.moe.moe_layers(v3.layers)) == (3, 58)


def test_dense_counts_are_the_dense_formula(models) -> None:
    """A dense model is counted by the dense formula exactly (its predictions unchanged), and the
    block-by-block counter agrees with it."""
    from trainscale.sim.model.counts import total_params_of

    for m in models.values():
        if m.moe is None:
            assert m.plain and m.active_params == m.params
            assert m.params == float(total_params(m.transformer, m.tied_embeddings))
            assert total_params_of(m) == m.params


def _write_model(tmp_path: Path, entry: dict) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": {"toy-moe": entry}}, sort_keys=False))
    return path


_TOY = {
    "description": "a toy", "layers": 4, "hidden": 512, "heads": 8, "kv_heads": 2,
    "vocab": 1000, "mlp": "swiglu", "tied_embeddings": False, "sources": ["https://example.org"],
    "moe": {"num_experts": 8, "experts_per_token": 2, "expert_ffn": 256},
}  # fmt: skip


def test_a_toy_moe_counts_by_hand(tmp_path: Path) -> None:
    m = load_models(_write_model(tmp_path, _TOY))["toy-moe"]
    attention = 2 * 512 * 512 + 2 * 512 * 128
    expert = 3 * 512 * 256
    block = attention + 2 * 512 + 8 * expert + 512 * 8
    assert m.params == 4 * block + 512 + 2 * 1000 * 512
    assert m.params - m.active_params == 4 * 6 * expert


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"moe": {"num_experts": 8, "experts_per_token": 2, "expert_ffn": 256, "top_k": 2}},
         "top_k"),
        ({"moe": {"num_experts": 8, "expert_ffn": 256}}, "experts_per_token"),
        ({"moe": {"num_experts": 8, "experts_per_token": 9, "expert_ffn": 256}},
         "more than num_experts"),
        ({"ffn": 1024}, "would be unused"),
        ({"moe": {"num_experts": 8, "experts_per_token": 2, "expert_ffn": 256,
                  "dense_layers": 1}}, "missing key(s) ffn"),
        ({"num_experts": 8}, "num_experts"),
        ({"hidden": 500}, "give head_dim"),
    ],
)  # fmt: skip
def test_unknown_or_inconsistent_moe_keys_are_errors(
    tmp_path: Path, change: dict, message: str
) -> None:
    with pytest.raises(InputFileError, match=r"models\.yaml") as error:
        load_models(_write_model(tmp_path, _TOY | change))
    assert message in str(error.value)


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_every_moe_model_is_predicted_with_its_active_weights(models, key: str) -> None:
    """Each catalogue MoE model is predicted (never as a dense model): the FLOPs per token behind
    its MFU are its active weights' (:func:`model_flops_per_token`), and its experts are
    exchanged (``alltoall_s`` > 0 with ``ep`` 8)."""
    row = {"model": key, "gpu": "h100-sxm-80gb", "num_gpus": 64, "tp": 1, "pp": 1, "ep": 8,
           "seq_len": 4096, "global_batch": 128, "micro_batch": 1, "sharding": "fsdp",
           "recompute": "full", "precision": "bf16", "framework": "pytorch"}  # fmt: skip
    result = predict(pd.DataFrame([row])).iloc[0]
    flops = result["mfu"] * 64 * 989.4e12 / result["tokens_per_s"]
    assert flops == pytest.approx(model_flops_per_token(models[key], 4096), rel=1e-3)
    assert result["alltoall_s"] > 0 and result["tokens_per_s_per_gpu"] > 0


def test_list_models_shows_experts_top_k_total_and_active() -> None:
    table = catalogue_table(load_catalogue(data_dir()), "models").set_index("model")
    v3 = table.loc["deepseek-v3"]
    assert (v3["experts"], v3["top_k"]) == (256, 8)
    assert v3["params_b"] == pytest.approx(671.03, abs=0.01)
    assert v3["active_params_b"] == pytest.approx(37.55, abs=0.01)
    assert pd.isna(table.loc["llama3-8b", "experts"]) and pd.isna(table.loc["qwen3-30b-a3b", "ffn"])
    assert table.loc["llama3-8b", "active_params_b"] == table.loc["llama3-8b", "params_b"]
    assert v3["gflop_per_token_4k"] == pytest.approx(280.51, abs=0.01)


#: FLOPs per token (10^9) at 4,096 tokens (Grok-1: 8,192) computed in data/published/moe-README.md
#: ("FLOPs per token" table): F with the attention scores counted whole, F_c causal-halved.
README_FLOPS = {
    "mixtral-8x7b": (82.93, 79.71), "mixtral-8x22b": (250.65, 242.20),
    "mixtral-8x22b-g8t8": (149.18, 140.73), "llama3-8x70b": (787.45, 771.35),
    "qwen2-57b-a14b": (87.12, 84.65), "qwen3-30b-a3b": (27.84, 23.01),
    "qwen3-235b-a22b": (166.96, 148.03), "gpt-oss-20b": (26.46, 24.05),
    "gpt-oss-120b": (37.95, 34.33), "grok-1": (541.06, 521.73), "deepseek-v3": (280.51, 249.81),
    "deepseek-v2": (185.21, 155.01), "kimi-k2": (219.83, 204.48),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(README_FLOPS))
def test_flops_per_token_under_both_conventions(models, key: str) -> None:
    """Both MFU conventions against the calibration data's own derivation; Grok-1's there takes
    the Llama-3 vocabulary (128,256 against its 131,072: 0.02 % apart)."""
    seq = 8192 if key == "grok-1" else 4096
    full, causal = README_FLOPS[key]
    assert model_flops_per_token(models[key], seq) / 1e9 == pytest.approx(full, rel=5e-4)
    assert model_flops_per_token(models[key], seq, causal=True) / 1e9 == pytest.approx(
        causal, rel=5e-4
    )


def test_dense_flops_are_the_simulators(models) -> None:
    for m in models.values():
        if m.plain:
            assert model_flops_per_token(m, 4096) == dense_flops_per_token(m.transformer, 4096)
