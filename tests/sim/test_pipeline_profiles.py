"""Plans a stack cannot run are named errors from its profile (data/frameworks.yaml
``pipeline_schedules`` and ``pipeline_shardings``, read by trainscale.sim.frameworks): DeepSpeed
has no interleaved 1F1B (vpp > 1) and runs only ddp and zero1 under pipeline parallelism."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.paths import data_dir
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.simulate import predict

#: A plan with pipeline parallelism (pp 4) and interleaving (vpp 2): valid for every stack but
#: DeepSpeed (8 layers per stage of Llama-2 7B, grad_accum 16 divisible by pp).
PLAN = {
    "model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 16, "tp": 1, "pp": 4, "vpp": 2, "sharding": "zero1",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


def _error(catalogue: object = None, **changes: object) -> str:
    with pytest.raises(ConfigurationError) as caught:
        predict(pd.DataFrame([{**PLAN, **changes}]), catalogue=catalogue)  # type: ignore[arg-type]
    return str(caught.value)


def test_deepspeed_with_interleaving_is_a_named_error() -> None:
    message = _error(framework="deepspeed")
    assert "column 'vpp'" in message
    assert "deepspeed profile has no interleaved 1F1B" in message
    assert "pipeline_schedules: 1f1b" in message and "use vpp 1" in message


@pytest.mark.parametrize("framework", ["megatron", "pytorch"])
def test_stacks_with_interleaved_1f1b_run_it(framework: str) -> None:
    result = predict(pd.DataFrame([{**PLAN, "framework": framework}]))
    assert result["tokens_per_s"].iloc[0] > 0


def test_deepspeed_without_interleaving_runs() -> None:
    result = predict(pd.DataFrame([{**PLAN, "framework": "deepspeed", "vpp": 1}]))
    assert result["tokens_per_s"].iloc[0] > 0


@pytest.mark.parametrize("sharding", ["zero2", "fsdp", "hsdp"])
def test_deepspeed_refuses_sharded_gradients_under_pipelining(sharding: str) -> None:
    message = _error(framework="deepspeed", vpp=1, sharding=sharding)
    assert "column 'sharding'" in message
    assert "deepspeed profile runs pipeline parallelism (pp > 1) only with ddp, zero1" in message


def _profiles(tmp_path: Path, edit: dict[str, dict[str, object]]) -> Path:
    """A copy of the shipped catalogues whose frameworks.yaml has ``edit`` applied per profile."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("hardware", "models", "nccl"):
        shutil.copy(data_dir() / f"{name}.yaml", folder / f"{name}.yaml")
    data = yaml.safe_load((data_dir() / "frameworks.yaml").read_text())
    for key, changes in edit.items():
        data["profiles"][key].update(changes)
    (folder / "frameworks.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def test_the_refusals_come_from_the_profile(tmp_path: Path) -> None:
    folder = _profiles(
        tmp_path,
        {
            "deepspeed": {"pipeline_schedules": ["1f1b", "interleaved_1f1b"]},
            "megatron": {"pipeline_shardings": ["ddp", "zero1"]},
        },
    )
    catalogue = load_catalogue(folder)
    frame = pd.DataFrame([{**PLAN, "framework": "deepspeed"}])
    assert predict(frame, catalogue=catalogue)["tokens_per_s"].iloc[0] > 0
    message = _error(catalogue, framework="megatron", sharding="zero2")
    assert "megatron profile runs pipeline parallelism (pp > 1) only with ddp, zero1" in message


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"pipeline_schedules": ["gpipe"]}, "pipeline_schedules"),
        ({"pipeline_schedules": []}, "pipeline_schedules"),
        ({"pipeline_shardings": ["zero3"]}, "pipeline_shardings"),
    ],
)
def test_a_bad_profile_value_is_named(tmp_path: Path, changes: dict, key: str) -> None:
    folder = _profiles(tmp_path, {"deepspeed": changes})
    with pytest.raises(InputFileError) as caught:
        load_catalogue(folder)
    assert str(caught.value).startswith(str(folder / "frameworks.yaml"))
    assert f"profiles.deepspeed.{key}" in str(caught.value)


def test_every_profile_documents_its_pipeline_behaviours() -> None:
    data = yaml.safe_load((data_dir() / "frameworks.yaml").read_text())
    for key, profile in data["profiles"].items():
        for behaviour in ("pipeline_schedules", "pipeline_shardings"):
            assert behaviour in profile, (key, behaviour)
            assert len(profile["sources"][behaviour]) > 40, (key, behaviour)
    deepspeed = data["profiles"]["deepspeed"]["sources"]["pipeline_schedules"]
    assert "issues/1110" in deepspeed and "issues/4035" in deepspeed


def test_a_study_offers_no_deepspeed_plan_with_interleaving(shipped_calibration: object) -> None:
    from trainscale.study.expand import expand_study
    from trainscale.study.spec import Study

    fixed = {k: v for k, v in PLAN.items() if k not in ("vpp", "sharding")}
    sweep = {"framework": ["megatron", "deepspeed"], "vpp": [1, 2], "sharding": ["zero1", "zero2"]}
    study = Study(name="plans", path="plans.yaml", description="plans", fixed=fixed, sweep=sweep)
    kept, rejects = expand_study(
        study,
        catalogue=load_catalogue(),
        calibration=shipped_calibration,  # type: ignore[arg-type]
    )
    deepspeed = kept[kept["framework"] == "deepspeed"]
    assert list(zip(deepspeed["vpp"], deepspeed["sharding"], strict=True)) == [(1, "zero1")]
    assert len(kept[kept["framework"] == "megatron"]) == 4
    refused = rejects[rejects["framework"] == "deepspeed"]
    assert set(refused["column"]) == {"vpp", "sharding"}
    assert refused["reason"].str.contains("profile").all()
