"""The catalogues: every required entry, with sources, and errors that name file and key.

Each catalogue file is checked against its JSON Schema (workflow/schemas/<name>.schema.yaml) when
it is loaded: a bad value names the file, line, key and what is allowed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale import predict, schema
from trainscale.errors import InputFileError, TrainscaleError
from trainscale.paths import data_dir, schema_file
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import CATALOGUE_FILES, Catalogue, load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.model.shape import load_models
from trainscale.sim.parameters import OFFSET_BASES, offset_name
from trainscale.sim.system.hardware import FABRICS, load_hardware

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
    with pytest.raises(
        InputFileError,
        match=r"hardware.yaml:\d+: key 'systems.hpe-cray-ex-gh200.fabric': 'myrinet' is not "
        r"allowed; allowed: infiniband, roce, efa, ethernet, slingshot$",
    ):
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
        InputFileError,
        match=r"models.yaml:4: key 'models.tiny.layers': -2 is less than the minimum of 1 "
        r"\(Transformer blocks.\)",
    ):
        load_models(bad)
    broken = tmp_path / "hardware.yaml"
    broken.write_text("gpus: [\n")
    with pytest.raises(InputFileError, match=r"hardware.yaml:\d+: invalid YAML"):
        load_hardware(broken)


# --------------------------------------------------------------------------------------------
# Schemas: a bad value names the file, line, key and what is allowed


def _copy_catalogue(tmp_path: Path) -> Path:
    folder = tmp_path / "catalogue"
    folder.mkdir()
    for name in CATALOGUE_FILES:
        shutil.copy2(data_dir() / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


def _line_of(path: Path, text: str, after: str = "") -> int:
    """1-based line of the first line holding ``text`` after the line starting with ``after``."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    return next(i for i, line in enumerate(lines[start:], start + 1) if text in line)


#: (file, the entry, text replaced in it, its replacement, the key named, what is said).
BAD_VALUES = [
    ("hardware", "  h100-sxm-80gb:", "hbm_gbytes_per_s: 3350.0", "hbm_gbytes_per_s: -3350.0",
     "gpus.h100-sxm-80gb.hbm_gbytes_per_s",
     r"-3350.0 is less than or equal to the minimum of 0 \(HBM bandwidth, GB/s.\)$"),
    ("hardware", "  h100-sxm-80gb:", "fused_attention_efficiency_max:", "fused_attn_efficiency:",
     "gpus.h100-sxm-80gb.fused_attn_efficiency",
     r"unknown key; allowed: description, bf16_tflops, fp8_tflops, hbm_gib, hbm_gbytes_per_s, "),
    ("models", "  gpt3-175b:", "mlp: gelu", "mlp: relu", "models.gpt3-175b.mlp",
     r"'relu' is not allowed; allowed: swiglu, gelu$"),
    ("frameworks", "  pytorch:", "fp8_recipe: tensorwise", "fp8_recipe: blockwise",
     "profiles.pytorch.fp8_recipe",
     r"'blockwise' is not allowed; allowed: delayed, current, tensorwise, rowwise$"),
    ("nccl", "", "channels: 16", "channels: 0", "channels",
     r"0 is less than the minimum of 1 \(Channels \(CTAs\) a collective runs on"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "entry", "old", "new", "key", "message"), BAD_VALUES)
def test_a_bad_catalogue_value_names_file_line_key_and_what_is_allowed(
    tmp_path: Path, name: str, entry: str, old: str, new: str, key: str, message: str
) -> None:
    folder = _copy_catalogue(tmp_path)
    path = folder / f"{name}.yaml"
    text = path.read_text()
    start = text.index(entry)
    path.write_text(text[:start] + text[start:].replace(old, new, 1))

    with pytest.raises(InputFileError) as caught:
        load_catalogue(folder)

    line = _line_of(path, new, after=entry)
    assert str(caught.value).startswith(f"{path}:{line}: key '{key}': "), str(caught.value)
    assert re.search(message, str(caught.value)), str(caught.value)
    assert caught.value.path == str(path) and caught.value.line == line


def test_every_problem_of_a_catalogue_is_listed_with_its_line(tmp_path: Path) -> None:
    folder = _copy_catalogue(tmp_path)
    path = folder / "nccl.yaml"
    text = path.read_text().replace("channels: 16", "channels: 0")
    path.write_text(text.replace("tree_bandwidth_factor: 0.92", "tree_bandwidth_factor: 1.5"))

    with pytest.raises(InputFileError) as caught:
        load_catalogue(folder)

    lines = str(caught.value).splitlines()
    assert lines[0] == f"{path}:{_line_of(path, 'tree_bandwidth_factor:')}: 2 problems:"
    assert lines[1].startswith(
        f"  line {_line_of(path, 'tree_bandwidth_factor:')}, "
        "key 'tree_bandwidth_factor': 1.5 is greater than the maximum of 1"
    )
    assert lines[2].startswith(f"  line {_line_of(path, 'channels:')}, key 'channels': 0 is less")


def test_the_shipped_catalogues_load_as_one_value() -> None:
    catalogue = load_catalogue()
    assert isinstance(catalogue, Catalogue)
    assert catalogue.gpu_keys == tuple(sorted(catalogue.hardware.gpus))
    assert catalogue.framework_keys == tuple(catalogue.frameworks)
    assert load_catalogue(data_dir()) == catalogue
    assert load_catalogue({n: data_dir() / f"{n}.yaml" for n in CATALOGUE_FILES}) == catalogue


def test_a_catalogue_mapping_must_name_every_file() -> None:
    with pytest.raises(TrainscaleError, match=r"catalogue: no file given for nccl \(give all of "):
        load_catalogue({n: data_dir() / f"{n}.yaml" for n in CATALOGUE_FILES if n != "nccl"})


def test_the_schemas_allow_exactly_the_values_the_code_knows() -> None:
    """The enums of the catalogue schemas are the simulator's own lists (written twice: once for
    the file's reader, once for the code)."""
    hardware = yaml.safe_load(schema_file("hardware").read_text())
    assert tuple(hardware["$defs"]["system"]["properties"]["fabric"]["enum"]) == FABRICS
    assert tuple(hardware["properties"]["fabric_efficiency_factor"]["required"]) == FABRICS
    models = yaml.safe_load(schema_file("models").read_text())
    assert tuple(models["$defs"]["model"]["properties"]["mlp"]["enum"]) == schema.MLP_KINDS
    frameworks = yaml.safe_load(schema_file("frameworks").read_text())
    profile = frameworks["$defs"]["profile"]["properties"]
    assert frameworks["properties"]["profiles"]["required"] == ["pytorch"]
    assert tuple(profile["shard_granularity"]["enum"]) == schema.SHARD_GRANULARITIES
    assert tuple(profile["attention_kernel"]["enum"]) == schema.ATTENTION_KERNELS
    assert tuple(profile["fp8_recipe"]["enum"]) == schema.FP8_RECIPES
    by_sharding = frameworks["$defs"]["behaviour"]["oneOf"][1]["required"]
    assert tuple(by_sharding) == schema.SHARDINGS


def test_every_list_of_framework_names_is_the_catalogues() -> None:
    """The framework list is the keys of data/frameworks.yaml (``Catalogue.framework_keys``);
    the JSON-Schema enums of run manifests and studies, the published-text matching and the
    calibration's offsets name exactly those."""
    from trainscale.published.sources import load_sources
    from trainscale.schema.choices import DEFAULT_FRAMEWORK
    from trainscale.sim.parameters import OFFSET_BASES, parameters

    keys = load_catalogue().framework_keys
    shipped = yaml.safe_load((data_dir() / "frameworks.yaml").read_text())["profiles"]
    assert tuple(shipped) == keys == ("megatron", "deepspeed", "pytorch")
    run = yaml.safe_load(schema_file("run").read_text())
    run_framework = run["$defs"]["configuration"]["properties"]["framework"]
    study = yaml.safe_load(schema_file("study").read_text())
    for enum in (run_framework["enum"], study["$defs"]["framework"]["enum"]):
        assert tuple(enum) == keys
    sources = load_sources(data_dir() / "published" / "sources.yaml", frameworks=keys)
    assert {p.profile for p in sources.frameworks} <= set(keys) and sources.profiles == keys
    assert DEFAULT_FRAMEWORK in keys
    offsets = {p.name for p in parameters(keys) if "_offset_" in p.name}
    assert offsets == {f"{b}_offset_{f}" for b in OFFSET_BASES for f in keys}
    assert load_calibration().frameworks == keys


def _other_frameworks(folder: Path) -> Path:
    """A copy of the shipped catalogues whose framework list is another: a new profile
    ``mystack`` (a copy of pytorch's) first, then the shipped ones in reverse order."""
    for name in CATALOGUE_FILES:
        (folder / f"{name}.yaml").write_text((data_dir() / f"{name}.yaml").read_text())
    document = yaml.safe_load((data_dir() / "frameworks.yaml").read_text())
    shipped = document["profiles"]
    mystack = {**shipped["pytorch"], "aliases": ["MyStack"], "description": "a test stack"}
    document["profiles"] = {"mystack": mystack, **dict(reversed(shipped.items()))}
    (folder / "frameworks.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return folder


def test_the_framework_list_is_the_catalogue_the_caller_loads(tmp_path: Path) -> None:
    """A profile added to a folder's frameworks.yaml is in that catalogue's framework list, in
    file order, in this process: nothing was read at import."""
    mine = load_catalogue(_other_frameworks(tmp_path))
    assert mine.framework_keys == ("mystack", "pytorch", "deepspeed", "megatron")
    assert load_catalogue().framework_keys == ("megatron", "deepspeed", "pytorch")


def test_another_framework_list_flows_through_configs_and_calibration(tmp_path: Path) -> None:
    """The framework codes of build_configs and the offsets of the calibration follow the
    catalogue the caller passes: under a reordered list with one more profile, every shipped
    framework predicts what it predicts under the shipped catalogue, and the new profile, given
    pytorch's offsets, predicts pytorch's numbers."""
    mine = load_catalogue(_other_frameworks(tmp_path))
    keys = mine.framework_keys
    row = {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 512, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "num_gpus": 256, "tp": 1, "pp": 1, "sharding": "fsdp",
        "recompute": "none", "precision": "bf16",
    }  # fmt: skip
    names = ["megatron", "mystack", "pytorch", "deepspeed", ""]
    frame = pd.DataFrame([{**row, "framework": name} for name in names])
    configs, _, _ = build_configs(
        frame, hardware=mine.hardware, models=mine.models, frameworks=mine.frameworks
    )
    expected = ["megatron", "mystack", "pytorch", "deepspeed", "pytorch"]
    assert [keys[i] for i in configs.stack.framework] == expected
    shipped = load_calibration()
    with pytest.raises(TrainscaleError, match=r"no offsets for framework\(s\) mystack"):
        predict(frame, catalogue=mine, calibration=shipped)
    calibration = load_calibration(frameworks=keys)  # the file's offsets; mystack's at priors
    assert calibration.frameworks == keys
    assert dict(calibration.framework_offsets["mystack"]) == dict.fromkeys(OFFSET_BASES, 0.0)
    assert calibration.framework_offsets["pytorch"] == shipped.framework_offsets["pytorch"]
    assert Calibration.defaults(keys).frameworks == keys
    as_pytorch = calibration.with_values(
        **{
            offset_name(b, "mystack"): shipped.value(offset_name(b, "pytorch"))
            for b in OFFSET_BASES
        }
    )
    ours = predict(frame, catalogue=mine, calibration=as_pytorch)
    theirs = predict(frame.replace({"framework": {"mystack": "pytorch"}}), calibration=shipped)
    assert list(ours["framework"]) == expected
    assert ours["tokens_per_s_per_gpu"].tolist() == theirs["tokens_per_s_per_gpu"].tolist()
    assert len(set(ours["tokens_per_s_per_gpu"])) > 1  # the frameworks differ
    assert load_catalogue().framework_keys == ("megatron", "deepspeed", "pytorch")
