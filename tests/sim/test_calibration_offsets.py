"""The per-framework offsets: one mapping in the Calibration, flat names in the file and the fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from trainscale.calibrate.stored import BLOCK
from trainscale.errors import InputFileError, TrainscaleError
from trainscale.paths import data_dir
from trainscale.sim.calibration import (
    Calibration,
    dump_calibration,
    load_calibration,
    named_frameworks,
)
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.parameters import (
    OFFSET_BASES,
    offset_name,
    offset_specs,
    parameter_spec,
    parameters,
    split_offset_name,
)

FRAMEWORKS = load_catalogue().framework_keys
"""The shipped framework list (the profile keys of ``data/frameworks.yaml``)."""

SHIPPED = data_dir() / "calibration.yaml"


def test_the_offsets_are_one_mapping_framework_then_base() -> None:
    calibration = load_calibration(SHIPPED)
    offsets = calibration.framework_offsets
    assert tuple(offsets) == FRAMEWORKS
    assert all(tuple(offsets[fw]) == OFFSET_BASES for fw in FRAMEWORKS)
    flat = yaml.safe_load(SHIPPED.read_text())["parameters"]
    for fw in FRAMEWORKS:
        for base in OFFSET_BASES:
            assert offsets[fw][base] == flat[f"{base}_offset_{fw}"]["value"]
    with pytest.raises(TypeError):
        offsets["pytorch"]["gemm_efficiency"] = 0.0  # type: ignore[index]


def test_flat_names_in_and_out() -> None:
    calibration = load_calibration(SHIPPED)
    moved = calibration.with_values(gemm_efficiency_offset_megatron=-0.2)
    assert moved.framework_offsets["megatron"]["gemm_efficiency"] == -0.2
    assert moved.value("gemm_efficiency_offset_megatron") == -0.2
    assert moved.framework_factors("gemm_efficiency")[FRAMEWORKS.index("megatron")] == (
        pytest.approx(np.exp(-0.2))
    )
    assert moved.framework_offsets["pytorch"] == calibration.framework_offsets["pytorch"]
    assert moved != calibration and moved.calibration_id != calibration.calibration_id
    assert Calibration(**calibration.as_dict()) == calibration
    by_mapping = Calibration(
        **{k: v for k, v in calibration.as_dict().items() if "_offset_" not in k},
        framework_offsets=calibration.framework_offsets,
    )
    assert by_mapping == calibration
    assert list(calibration.as_dict()) == [
        *(n for n in calibration.as_dict() if "_offset_" not in n),
        *(offset_name(b, fw) for b in OFFSET_BASES for fw in FRAMEWORKS),
    ]


def test_a_missing_or_unknown_offset_is_an_error() -> None:
    values = Calibration.defaults(FRAMEWORKS).as_dict()
    with pytest.raises(TypeError, match="missing gemm_efficiency_offset_pytorch"):
        Calibration(**{k: v for k, v in values.items() if k != "gemm_efficiency_offset_pytorch"})
    with pytest.raises(TypeError, match=r"unknown parameter.*gemm_efficiency_offset_jax"):
        Calibration(frameworks=FRAMEWORKS, **values, gemm_efficiency_offset_jax=0.0)
    # without a framework list, the offsets name the frameworks: jax lacks its other four
    with pytest.raises(TypeError, match="missing attention_efficiency_offset_jax"):
        Calibration(**values, gemm_efficiency_offset_jax=0.0)
    with pytest.raises(KeyError):
        Calibration.defaults(FRAMEWORKS).value("gemm_efficiency_offset_jax")


def test_the_file_is_written_flat_byte_for_byte(tmp_path: Path) -> None:
    document = yaml.safe_load(SHIPPED.read_text())
    blocks = ("power", "moe", BLOCK)  # written after the intervals block, in this order
    written = ("calibration_id", "parameters", "intervals", *blocks)
    provenance = {k: v for k, v in document.items() if k not in written}
    out = tmp_path / "calibration.yaml"
    dump_calibration(load_calibration(SHIPPED), out, provenance, {k: document[k] for k in blocks})
    assert out.read_bytes() == SHIPPED.read_bytes()


def test_offset_specs_follow_a_framework_list() -> None:
    names = [s.name for s in offset_specs(("pytorch", "mystack"))]
    assert names == [offset_name(b, fw) for b in OFFSET_BASES for fw in ("pytorch", "mystack")]
    assert split_offset_name("fp8_gemm_offset_my_stack") == ("fp8_gemm", "my_stack")
    assert split_offset_name("fp8_gemm_scale") is None
    assert [s.name for s in parameters(FRAMEWORKS) if "_offset_" in s.name] == [
        s.name for s in offset_specs(FRAMEWORKS)
    ]
    assert parameter_spec("fp8_gemm_offset_mystack") == offset_specs(("mystack",))[3]
    with pytest.raises(KeyError, match="latency"):
        parameter_spec("latency")


def test_a_calibration_pickles_to_an_equal_one() -> None:
    import pickle

    calibration = load_calibration(SHIPPED).with_values(fp8_gemm_offset_deepspeed=0.125)
    copy = pickle.loads(pickle.dumps(calibration))
    assert copy == calibration and copy.intervals == calibration.intervals
    assert copy.framework_offsets["deepspeed"]["fp8_gemm"] == 0.125


def test_a_calibration_loads_for_the_framework_list_it_is_given(tmp_path: Path) -> None:
    """Offsets the file lacks stand at their prior for a framework the caller's list adds; an
    offset of a framework outside the list is an error naming the file and the key; the order
    is the caller's, the values and the id the file's."""
    assert named_frameworks(SHIPPED) == FRAMEWORKS
    shipped = load_calibration(SHIPPED)
    mine = load_calibration(SHIPPED, frameworks=("pytorch", "mystack", "megatron", "deepspeed"))
    assert mine.frameworks == ("pytorch", "mystack", "megatron", "deepspeed")
    assert dict(mine.framework_offsets["mystack"]) == dict.fromkeys(OFFSET_BASES, 0.0)
    assert mine.framework_offsets["megatron"] == shipped.framework_offsets["megatron"]
    reordered = shipped.for_frameworks(("pytorch", "megatron"))
    assert reordered.frameworks == ("pytorch", "megatron", "deepspeed")
    assert reordered.calibration_id == shipped.calibration_id and reordered == shipped
    assert reordered.framework_factors("gemm_efficiency")[0] == pytest.approx(
        np.exp(shipped.value("gemm_efficiency_offset_pytorch"))
    )
    with pytest.raises(InputFileError, match=r"unknown key\(s\) .*_offset_deepspeed"):
        load_calibration(SHIPPED, frameworks=("megatron", "pytorch"))
    with pytest.raises(TrainscaleError, match=r"no offsets for framework\(s\) jax"):
        shipped.for_frameworks(("pytorch", "jax"))
