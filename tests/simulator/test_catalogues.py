"""The catalogues: every required entry, with sources, and errors that name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainscale.errors import InputFileError
from trainscale.model.shape import load_models
from trainscale.system.hardware import load_hardware

REQUIRED_GPUS = {"v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb",
                 "h200-sxm-141gb", "b200"}  # fmt: skip
REQUIRED_MODELS = {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
                   "llama3-405b", "gpt3-175b", "mpt-7b", "mpt-30b", "mpt-70b"}  # fmt: skip


def test_required_entries_exist_with_sources() -> None:
    hardware = load_hardware()
    assert set(hardware.gpus) >= REQUIRED_GPUS
    for entry in [*hardware.gpus.values(), *hardware.systems.values()]:
        assert entry.sources and all(s.startswith("https://") for s in entry.sources)
    models = load_models()
    assert set(models) >= REQUIRED_MODELS
    assert all(m.sources and all(s.startswith("https://") for s in m.sources)
               for m in models.values())  # fmt: skip


def test_every_gpu_has_a_dgx_like_default_system() -> None:
    hardware = load_hardware()
    for key in hardware.gpus:
        system = hardware.system_for(key)
        assert system.gpu == key and system.gpus_per_node == 8
    assert hardware.system_for("v100-sxm-32gb").nic_bytes_per_s_per_gpu == 50e9 / 8


def test_units_are_converted_once() -> None:
    h100 = load_hardware().gpus["h100-sxm-80gb"]
    assert h100.bf16_flops_per_s == pytest.approx(989.4e12)
    assert h100.hbm_bytes_per_s == pytest.approx(3.35e12)
    assert h100.nvlink_bytes_per_s == pytest.approx(450e9)


def test_llama2_70b_uses_grouped_query_attention() -> None:
    assert load_models()["llama2-70b"].kv_heads == 8


def test_broken_catalogue_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "models.yaml"
    bad.write_text("models:\n  tiny:\n    description: x\n    layers: -2\n    hidden: 64\n"
                   "    heads: 4\n    kv_heads: 4\n    ffn: 128\n    vocab: 10\n    mlp: gelu\n"
                   "    tied_embeddings: false\n    sources: []\n")  # fmt: skip
    with pytest.raises(
        InputFileError, match=r"models.yaml: models.tiny.layers: expected a positive"
    ):
        load_models(bad)
    broken = tmp_path / "hardware.yaml"
    broken.write_text("gpus: [\n")
    with pytest.raises(InputFileError, match=r"hardware.yaml:\d+: invalid YAML"):
        load_hardware(broken)
