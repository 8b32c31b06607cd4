"""The catalogues: every required entry, with sources, and errors that name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainscale.errors import InputFileError
from trainscale.sim.model.shape import load_models
from trainscale.sim.system.hardware import load_hardware

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
        # GH200 exists only as a 4-superchip node (HPE Cray EX); every other GPU is DGX/HGX-like
        assert system.gpu == key and system.gpus_per_node == (4 if key == "gh200-96gb" else 8)
    assert hardware.system_for("v100-sxm-32gb").nic_bytes_per_s_per_gpu == 50e9 / 8


def test_export_variants_cap_nvlink_and_keep_compute() -> None:
    gpus = load_hardware().gpus
    a800, a100 = gpus["a800-sxm-80gb"], gpus["a100-sxm-80gb"]
    h800, h100 = gpus["h800-sxm-80gb"], gpus["h100-sxm-80gb"]
    # 400 GB/s bidirectional = 200 GB/s per direction, against 300 (A100) and 450 (H100)
    assert a800.nvlink_bytes_per_s == pytest.approx(200e9)
    assert h800.nvlink_bytes_per_s == pytest.approx(200e9)
    assert a800.bf16_flops_per_s == a100.bf16_flops_per_s
    assert h800.bf16_flops_per_s == h100.bf16_flops_per_s
    assert h800.fp8_flops_per_s == h100.fp8_flops_per_s


def test_gh200_superchip_and_its_slingshot_node() -> None:
    hardware = load_hardware()
    gh200 = hardware.gpus["gh200-96gb"]
    assert gh200.hbm_bytes == pytest.approx(96 * 2**30)
    assert gh200.hbm_bytes_per_s == pytest.approx(4.0e12)
    assert gh200.gemm_efficiency_max * 989.4 == pytest.approx(828.6, abs=0.5)  # MAMF
    assert not gh200.nvls
    node = hardware.system_for("gh200-96gb")
    assert node.gpus_per_node == 4 and not node.nvswitch
    assert node.fabric == "slingshot"
    assert node.nic_bytes_per_s_per_gpu == pytest.approx(200e9 / 8)
    assert 0 < hardware.fabric_efficiency_factor["slingshot"] <= 1


def test_new_systems_and_the_inferred_study_cluster() -> None:
    systems = load_hardware().systems
    for key, gpu in (("hgx-a800", "a800-sxm-80gb"), ("hgx-h800", "h800-sxm-80gb")):
        assert systems[key].gpu == gpu and systems[key].gpus_per_node == 8
    fernandez = systems["fernandez-h100"]
    assert fernandez.gpu == "h100-sxm-80gb" and fernandez.gpus_per_node == 8
    assert fernandez.nic_bytes_per_s_per_gpu * 8 * 8 == pytest.approx(8 * 400e9)
    assert "inferred" in fernandez.description.lower()
    assert "not stated" in fernandez.description


def test_a_system_on_an_unknown_fabric_is_refused(tmp_path: Path) -> None:
    text = (Path(load_hardware().path)).read_text()
    bad = tmp_path / "hardware.yaml"
    bad.write_text(text.replace("fabric: slingshot", "fabric: myrinet", 1))
    with pytest.raises(InputFileError, match=r"hpe-cray-ex-gh200.fabric: 'myrinet' is not one of"):
        load_hardware(bad)


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
