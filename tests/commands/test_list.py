"""``trainscale list``: the catalogues' entries, read from the catalogue files, not from code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.cli import main
from trainscale.commands.catalogue import KINDS, catalogue_table
from trainscale.paths import data_dir
from trainscale.sim.catalogue import CATALOGUE_FILES, load_catalogue


@pytest.mark.parametrize("kind", tuple(KINDS))
def test_every_kind_lists_every_catalogue_key(kind: str) -> None:
    catalogue = load_catalogue()
    expected = {
        "gpus": catalogue.hardware.gpus,
        "models": catalogue.models,
        "systems": catalogue.hardware.systems,
        "frameworks": catalogue.frameworks,
    }[kind]
    table = catalogue_table(catalogue, kind)
    assert list(table.iloc[:, 0]) == sorted(expected)


def test_gpu_facts_are_in_their_units() -> None:
    table = catalogue_table(load_catalogue(), "gpus").set_index("gpu")
    h100 = table.loc["h100-sxm-80gb"]
    assert h100["label"] == "H100 80GB"
    assert h100["bf16_tflops"] == pytest.approx(989.4, rel=1e-3)
    assert h100["hbm_gib"] == pytest.approx(
        load_catalogue().hardware.gpus["h100-sxm-80gb"].hbm_bytes / 2**30
    )
    assert h100["tdp_w"] == 700
    assert pd.isna(table.loc["v100-sxm-32gb", "fp8_tflops"])


def test_a_gpu_added_to_a_catalogue_copy_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in CATALOGUE_FILES:
        shutil.copy(data_dir() / f"{name}.yaml", tmp_path / f"{name}.yaml")
    hardware = yaml.safe_load((tmp_path / "hardware.yaml").read_text())
    gpus = hardware["gpus"]
    gpus["x200-test"] = dict(gpus["h100-sxm-80gb"], description="a GPU of this test")
    hardware["systems"]["x200-node"] = dict(hardware["systems"]["dgx-h100"], gpu="x200-test")
    hardware["default_system"]["x200-test"] = "x200-node"
    (tmp_path / "hardware.yaml").write_text(yaml.safe_dump(hardware, sort_keys=False))
    assert main(["list", "gpus", "--catalogue", str(tmp_path), "--csv"]) == 0
    listed = capsys.readouterr().out
    assert "\nx200-test," in listed and listed.rstrip().endswith("x200-node")


def test_text_table_and_missing_catalogue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "systems"]) == 0
    out = capsys.readouterr().out
    assert "dgx-h100" in out and "gpus_per_node" in out
    assert max(len(line) for line in out.splitlines()) < 250
    assert main(["list", "models", "--catalogue", str(tmp_path)]) == 2
    assert "hardware.yaml" in capsys.readouterr().err
