"""Study files with numbers no run can have: every numeric key bounded by the schema, products
of the grid's values (tokens per step, derived batches) bounded at start-up, text that is not
UTF-8 named (trainscale.study.limits, workflow/schemas/study.schema.yaml, trainscale.io.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import trainscale
from trainscale.errors import InputFileError
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.expand import expand_study
from trainscale.study.load import load_study

#: The schema beside the package under test (so an older checkout is tested with its own).
SCHEMA = Path(trainscale.__file__).resolve().parents[2] / "workflow/schemas/study.schema.yaml"
CATALOGUE = load_catalogue()
NAMES = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}

BASE = {
    "description": "test study",
    "fixed": {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 256, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "pp": 1, "sharding": "fsdp", "recompute": "none",
        "precision": "bf16",
    },
    "sweep": {"num_gpus": [8, 16], "tp": [1, 2]},
}  # fmt: skip


def _study(tmp_path: Path, section: str, **values: object) -> Path:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data[section] = {**data.get(section, {}), **values}
    if section == "derive":
        del data["fixed"]["global_batch"]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _error(path: Path) -> str:
    with pytest.raises(InputFileError) as caught:
        load_study(path, schema=SCHEMA, **NAMES)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message  # names the file first
    return message


#: Every numeric key of a study at 2^63 (which int64 cannot hold) or just above its bound.
HUGE = 2**63
OVER_THE_BOUND = [
    ("fixed", "seq_len", HUGE), ("fixed", "global_batch", HUGE), ("fixed", "micro_batch", HUGE),
    ("fixed", "layers", 10_001), ("fixed", "hidden", 2**20 + 1), ("fixed", "heads", 2**16 + 1),
    ("fixed", "kv_heads", 2**16 + 1), ("fixed", "ffn", 2**22 + 1), ("fixed", "vocab", 2**24 + 1),
    ("fixed", "seq_len", 2**24 + 1), ("fixed", "global_batch", 2**30 + 1),
    ("fixed", "micro_batch", 2**30 + 1), ("fixed", "pp", 2**20 + 1), ("fixed", "cp", 2**20 + 1),
    ("fixed", "vpp", 10_001), ("fixed", "gpus_per_node", 1025),
    ("fixed", "nic_gbit_per_s_per_gpu", 10_001.0), ("fixed", "nic_gbit_per_s_per_gpu", 1e-300),
    ("fixed", "power_limit_w", 10_001.0),
    ("sweep", "num_gpus", [8, HUGE]), ("sweep", "num_gpus", [8, 2**20 + 1]),
    ("sweep", "tp", [1, 2**64]), ("derive", "global_batch_tokens", HUGE),
    ("derive", "sequences_per_dp_rank", 2**30 + 1),
    ("filters", "max_model_parallel", HUGE), ("top", "rows_per_job", HUGE),
]  # fmt: skip


@pytest.mark.parametrize(("section", "key", "value"), OVER_THE_BOUND)
def test_a_number_above_its_bound_is_a_named_error_at_start_up(
    tmp_path: Path, section: str, key: str, value: object
) -> None:
    if section == "top":
        data = {**BASE, key: value}
        path = tmp_path / "big.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        where = key
    else:
        path = _study(tmp_path, section, **{key: value})
        where = f"{section}.{key}" + ("[1]" if isinstance(value, list) else "")
    message = _error(path)
    assert f"key '{where}'" in message
    assert "maximum" in message or "not allowed" in message or "minimum" in message


def test_the_bound_itself_is_allowed(tmp_path: Path) -> None:
    path = _study(tmp_path, "fixed", layers=32, seq_len=2**24, global_batch=2**16)
    assert load_study(path, schema=SCHEMA, **NAMES).fixed["seq_len"] == 2**24


def test_tokens_per_step_above_two_to_the_forty_name_both_keys(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["fixed"]["seq_len"] = 2**20  # each within its own bound ...
    del data["fixed"]["global_batch"]
    data["sweep"]["global_batch"] = [8, 2**30]  # ... but 2^50 tokens per step together
    path = tmp_path / "tokens.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    message = _error(path)
    assert "key 'sweep.global_batch[1]'" in message
    assert "fixed.seq_len" in message and "tokens per step" in message
    assert "1,099,511,627,776" in message


def test_a_derived_global_batch_above_its_bound_names_the_derive_key(tmp_path: Path) -> None:
    path = _study(tmp_path, "derive", sequences_per_dp_rank=2**30)  # 2^30 · dp 16 sequences
    message = _error(path)
    assert "key 'derive.sequences_per_dp_rank'" in message
    assert "17,179,869,184" in message  # 2^30 · 16 GPUs / (tp 1 · pp 1 · cp 1)


def test_a_study_at_the_bounds_expands_with_exact_products(
    tmp_path: Path, shipped_calibration: Calibration
) -> None:
    path = _study(tmp_path, "fixed", seq_len=2**24, global_batch=2**16)
    study = load_study(path, schema=SCHEMA, **NAMES)
    configurations, _ = expand_study(study, catalogue=CATALOGUE, calibration=shipped_calibration)
    assert len(configurations) == 4
    assert (configurations["seq_len"] * configurations["global_batch"] == 2**40).all()


def test_a_study_file_that_is_not_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    text = yaml.safe_dump(BASE, sort_keys=False) + "# café\n"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(InputFileError) as caught:
        load_study(path, schema=SCHEMA, **NAMES)
    line = text.count("\n")  # the comment is the last line
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: not UTF-8 text: byte 0xe9 at column 6"), message
    assert "save the file as UTF-8" in message
