"""What a study's per-study outputs show by default, and what a report: block changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainscale.errors import InputFileError
from trainscale.figures._study_text import setup_note
from trainscale.names import Names
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.load import load_study
from trainscale.study.report import report_spec

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "study.schema.yaml"
CATALOGUE = load_catalogue()
NAMES = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}

A100 = {
    "description": "Llama-2 13B, FSDP, A100, 16 to 1,024 GPUs.",
    "fixed": {
        "model": "llama2-13b", "seq_len": 4096, "global_batch": 512, "micro_batch": 1,
        "gpu": "a100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp", "precision": "bf16",
    },
    "sweep": {"recompute": ["none", "full"], "num_gpus": [16, 32, 64, 128, 256, 512, 1024]},
}  # fmt: skip


def _study(tmp_path: Path, data: dict, name: str = "mine"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_study(path, schema=SCHEMA, **NAMES)


def _shipped(name: str):
    return load_study(REPO / "config" / "studies" / f"{name}.yaml", schema=SCHEMA, **NAMES)


def test_scale_out_study_plots_gpus_with_one_series_per_model() -> None:
    spec = report_spec(_shipped("fsdp_scaleout"))

    assert spec.x == "num_gpus"
    assert spec.series == ("model",)
    assert spec.best_of == ("micro_batch", "recompute")
    assert spec.facet is None
    assert spec.metrics[:2] == ("tokens_per_s", "tokens_per_s_per_gpu")


def test_too_many_plans_are_collapsed_to_the_fastest() -> None:
    spec = report_spec(_shipped("best_plan"))  # model x tp x pp x sharding = 256 series

    assert spec.series == ("model",)
    assert set(spec.best_of) == {"micro_batch", "recompute", "tp", "pp", "sharding"}


def test_too_many_setups_get_a_facet_on_the_key_with_fewest_values() -> None:
    spec = report_spec(_shipped("global_batch_inference"))  # 2 seq_len x 8 batches

    assert spec.x == "num_gpus"
    assert spec.facet == "seq_len"
    assert spec.series == ("global_batch",)


def test_without_a_gpu_sweep_the_first_numeric_sweep_is_the_x_axis() -> None:
    spec = report_spec(_shipped("context_length"))

    assert spec.x == "seq_len"
    assert spec.series == ("model",)


def test_report_block_overrides_the_defaults(tmp_path: Path) -> None:
    fixed = {k: v for k, v in A100["fixed"].items() if k != "tp"}
    data = {**A100, "fixed": fixed, "sweep": {**A100["sweep"], "tp": [1, 2]}}
    data["report"] = {"series": ["recompute"], "best_of": ["tp"], "metrics": ["mfu"]}

    spec = report_spec(_study(tmp_path, data))

    assert (spec.x, spec.series, spec.best_of, spec.metrics) == (
        "num_gpus", ("recompute",), ("tp",), ("mfu",),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ({"series": [], "best_of": []}, "swept column(s) recompute have no role"),
        ({"x": "model"}, "key 'report.x': 'model' is not a swept column"),
        ({"facet": "recompute", "best_of": ["recompute"]}, "recompute given more than one role"),
    ],
)
def test_a_bad_report_block_names_the_file_and_key(
    tmp_path: Path, report: dict, message: str
) -> None:
    study = _study(tmp_path, {**A100, "report": report})

    with pytest.raises(InputFileError) as error:
        report_spec(study)

    assert message in str(error.value) and "mine.yaml" in str(error.value)


def test_unknown_report_key_is_rejected_by_the_schema(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"report\.colour"):
        _study(tmp_path, {**A100, "report": {"colour": "red"}})


def test_setup_note_comes_from_the_study_not_from_the_paper(tmp_path: Path) -> None:
    study = _study(tmp_path, A100)
    names = Names.of(CATALOGUE.hardware, CATALOGUE.models)
    note = setup_note(study, report_spec(study, names), CATALOGUE.hardware, "pytorch")

    assert "A100 80GB" in note and "Llama-2 13B" in note
    assert "global batch 512 sequences" in note
    assert "H100" not in note and "2,048" not in note and "fernandez" not in note


def test_setup_note_names_no_default_stack_when_the_stack_is_swept(tmp_path: Path) -> None:
    swept = {**A100, "sweep": {**A100["sweep"], "framework": ["megatron", "pytorch"]}}
    study = _study(tmp_path, swept)
    note = setup_note(study, report_spec(study), CATALOGUE.hardware, "pytorch")

    assert "(default)" not in note
    assert "framework megatron, pytorch (series)" in note
    # a study that leaves the stack out says which one it gets
    plain = _study(tmp_path, A100, name="plain")
    assert "framework pytorch (default)" in setup_note(
        plain, report_spec(plain), CATALOGUE.hardware, "pytorch"
    )
