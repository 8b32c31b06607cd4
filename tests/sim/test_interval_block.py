"""A calibration file's ``intervals`` block is checked when it is loaded
(:mod:`trainscale.sim.interval_checks`): whatever value a key holds, the file is refused naming
the file and the key, or every prediction's interval is finite and holds its point."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.errors import InputFileError
from trainscale.sim.calibration import load_calibration
from trainscale.sim.simulate import predict

REPO = Path(__file__).resolve().parents[2]
SHIPPED = yaml.safe_load((REPO / "data" / "calibration.yaml").read_text())
PILOT = {
    "pilot_gpus": [8],
    "pilots_covered": "",
    "bins": [
        {"log2_distance_from": start, "log2_distance_to": end, "lower_log_factor": -0.1 * (k + 1),
         "upper_log_factor": 0.1 * (k + 1), "rows": 10}
        for k, (start, end) in enumerate(
            [(0.0, 0.5), (0.5, 1.5), (1.5, 2.5), (2.5, 3.5), (3.5, None)]
        )
    ],
    "max_log2_distance_measured": 6.0,
}  # fmt: skip
CONFIGS = pd.DataFrame(
    [
        {"model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": n, "seq_len": 4096,
         "global_batch": 2048, "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "fsdp",
         "recompute": "none", "precision": "bf16", "framework": framework}
        for n in (8, 64, 1024)
        for framework in ("pytorch", "megatron")
    ]
)  # fmt: skip


def _numeric_keys(value: object, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [k for name, item in value.items() for k in _numeric_keys(item, (*path, name))]
    if isinstance(value, list):
        return [k for i, item in enumerate(value) for k in _numeric_keys(item, (*path, i))]
    return [path] if isinstance(value, int | float) and not isinstance(value, bool) else []


BLOCK = {**SHIPPED["intervals"], "pilot": PILOT}
KEYS = [k for k in _numeric_keys(BLOCK) if "source_out_coverage" not in k]


def _key_text(path: tuple) -> str:
    text = "intervals"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    key=st.sampled_from(KEYS),
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e300, -1e300]),
    ),
    swap=st.booleans(),
)
def test_a_bad_interval_value_is_named_or_the_intervals_hold_their_point(
    tmp_path_factory: pytest.TempPathFactory, key: tuple, value: float, swap: bool
) -> None:
    block = copy.deepcopy(BLOCK)
    if swap:  # lower and upper of one pilot bin exchanged
        entry = block["pilot"]["bins"][hash(key) % len(PILOT["bins"])]
        entry["lower_log_factor"], entry["upper_log_factor"] = (
            entry["upper_log_factor"], entry["lower_log_factor"],
        )  # fmt: skip
    else:
        node = block
        for part in key[:-1]:
            node = node[part]
        node[key[-1]] = value
    path = tmp_path_factory.mktemp("cal") / "calibration.yaml"
    path.write_text(yaml.safe_dump({**SHIPPED, "intervals": block}, sort_keys=False))
    try:
        calibration = load_calibration(path)
    except InputFileError as error:
        assert str(error).startswith(f"{path}: ")
        assert "intervals." in str(error) and "please report" not in str(error)
        if not swap:
            assert (
                _key_text(key) in str(error)
                or "intervals.level" in str(error)
                or ("intervals.pilot.bins" in str(error))
            )
        return
    out = predict(CONFIGS, calibration=calibration)
    for column in ("tokens_per_s_per_gpu", "step_time_s"):
        lo, mid, hi = (out[f"{column}{s}"].to_numpy(float) for s in ("_lo", "", "_hi"))
        assert np.isfinite(lo).all() and np.isfinite(hi).all()
        assert (lo <= mid * (1 + 1e-9)).all() and (mid <= hi * (1 + 1e-9)).all()


def test_swapped_pilot_bins_name_file_and_key(tmp_path: Path) -> None:
    block = copy.deepcopy(BLOCK)
    block["pilot"]["bins"][2]["lower_log_factor"] = 0.3
    block["pilot"]["bins"][2]["upper_log_factor"] = -0.3
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump({**SHIPPED, "intervals": block}, sort_keys=False))
    with pytest.raises(
        InputFileError, match=r"intervals\.pilot\.bins\[2\]\.lower_log_factor: 0\.3"
    ):
        load_calibration(path)


def test_a_nan_quantile_names_file_and_key(tmp_path: Path) -> None:
    block = copy.deepcopy(BLOCK)
    block["quantiles"]["pytorch"]["value"] = math.nan
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump({**SHIPPED, "intervals": block}, sort_keys=False))
    with pytest.raises(InputFileError, match=r"intervals\.quantiles\.pytorch\.value: nan"):
        load_calibration(path)
