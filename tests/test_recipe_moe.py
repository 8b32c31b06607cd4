"""docs/recipes/add-a-model.md, "A mixture-of-experts model", followed for real with no code edit:
a new MoE model (Qwen3 30B-A3B's shape with 64 experts of 1,536 under a new key and name) is added
to a copy of the catalogues, listed with its experts and parameters, and predicted with an
expert-parallel plan through ``trainscale predict``; a key the moe block does not know is an
error naming it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import run_cli
from trainscale.paths import data_dir

MODEL = "mymoe-16b"


def _add(folder: Path, moe_extra: dict | None = None) -> None:
    path = folder / "models.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    model = dict(document["models"]["qwen3-30b-a3b"])
    model.update(
        label="MyMoE 16B", aliases=["MyMoE-16B"], description="a test MoE model",
        moe={**model["moe"], "num_experts": 64, "expert_ffn": 1536, **(moe_extra or {})},
    )  # fmt: skip
    document["models"][MODEL] = model
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def _trainscale(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``trainscale ARGS`` with TRAINSCALE_DATA set to ``folder``, run in this process
    (:func:`tests.conftest.run_cli`; a command reads the data folder when it runs)."""
    return run_cli(*args, cwd=folder.parent, env={"TRAINSCALE_DATA": str(folder)})


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(data_dir(), root)
    return root


def test_a_new_moe_model_is_listed_and_predicted(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _add(folder)
    listed = _trainscale(folder, "list", "models")
    assert listed.returncode == 0, listed.stderr
    assert MODEL in listed.stdout
    out = tmp_path / "moe.csv"
    done = _trainscale(
        folder, "predict", "--model", MODEL, "--gpu", "h100-sxm-80gb", "--num-gpus", "64",
        "--seq-len", "4096", "--global-batch", "512", "--micro-batch", "1", "--tp", "1",
        "--pp", "1", "--ep", "8", "--sharding", "zero1", "--framework", "megatron", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = pd.read_csv(out).iloc[0]
    assert row["ep"] == 8 and row["tokens_per_s_per_gpu"] > 0
    assert row["alltoall_s"] > 0


def test_an_unknown_moe_key_is_an_error_naming_it(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _add(folder, {"num_routed_experts": 64})
    done = _trainscale(folder, "list", "models")
    assert done.returncode != 0
    assert "num_routed_experts" in done.stderr
    assert "models.yaml" in done.stderr
