"""Property test (hypothesis) of `trainscale predict` on damaged tables (issue 23, item 9): for any
table of valid and damaged rows, no traceback ever; with `--skip-invalid` every row is either
predicted or rejected with its reason; and whatever comes out with exit status 0 holds no NaN,
infinite, negative or out-of-range value, and no MFU or HFU above 1 without its flag."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.cli import main
from trainscale.schema import METRIC_COLUMNS, NUMERIC_BOUNDS
from trainscale.sim.inputs import SHAPE_COLUMNS

BASE = {
    "model": "llama2-7b", "gpu": "h100-sxm-80gb", "num_gpus": 16, "seq_len": 4096,
    "global_batch": 32, "micro_batch": 1, "tp": 1, "pp": 1, "cp": 1, "vpp": 1,
    "sharding": "fsdp", "recompute": "none", "precision": "bf16", "gpus_per_node": 0,
    "nic_gbit_per_s_per_gpu": 0.0, "power_limit_w": 0.0, "framework": "pytorch",
}  # fmt: skip
#: Valid variations of a row (each keeps the row valid with the others at BASE).
VALID = {
    "model": ["llama2-7b", "llama2-13b", "llama3-8b"], "gpu": ["h100-sxm-80gb", "a100-sxm-80gb"],
    "seq_len": [2048, 4096, 8192, 2**20], "tp": [1, 2, 8], "recompute": ["none", "full"],
    "gpus_per_node": [0, 4, 8], "nic_gbit_per_s_per_gpu": [0.0, 100.0, 400.0],
    "power_limit_w": [0.0, 300.0], "framework": ["pytorch", "megatron"],
}  # fmt: skip
NUMBERS = [c for c in BASE if c in NUMERIC_BOUNDS]
TEXTS = [c for c in BASE if c not in NUMERIC_BOUNDS]
DAMAGED_NUMBERS = [
    "", 0, -1, -0.0, 0.5, 3, 7.25, 1e300, 1e-300, math.inf, -math.inf, math.nan, 2**31, 2**53,
    2**62, 10**19, "1,024", "0,5", "1 024", "\u22128", "8 GPUs", "400Gbps", "abc", "1e400",
    "nan", "inf", "0x10", "1_000", True,
]  # fmt: skip
DAMAGED_TEXTS = ["", "unknown", 5, "nan", " fsdp ", "FSDP", "h100", "llama-2-7b"]


@st.composite
def tables(draw: st.DrawFn) -> pd.DataFrame:
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        row = dict(BASE)
        for name in draw(st.sets(st.sampled_from(list(VALID)), max_size=3)):
            row[name] = draw(st.sampled_from(VALID[name]))
        if row["tp"] > 1:
            row["num_gpus"], row["global_batch"] = 16, 8 * 16 // row["tp"]
        for _ in range(draw(st.integers(0, 2))):
            name = draw(st.sampled_from(NUMBERS + TEXTS))
            pool = DAMAGED_NUMBERS if name in NUMBERS else DAMAGED_TEXTS
            row[name] = draw(st.sampled_from(pool))
        rows.append(row)
    return pd.DataFrame(rows)


_TIMES = [c.name for c in METRIC_COLUMNS if c.dtype == "float64"]


def _check_output(out: Path) -> pd.DataFrame:
    result = pd.read_csv(out, keep_default_na=False, na_values=[""])
    for name in _TIMES:
        values = pd.to_numeric(result[name]).to_numpy(np.float64)
        if name.endswith(("_lo", "_hi")):
            values = values[~np.isnan(values)]
        assert np.isfinite(values).all(), name
        assert (values >= 0).all(), name
    assert (result["step_time_s"] > 0).all() and (result["mem_gib_per_gpu"] > 0).all()
    named = result["model"].fillna("").astype(str).str.strip() != ""
    for name, bound in NUMERIC_BOUNDS.items():
        values = pd.to_numeric(result[name]).to_numpy(np.float64)
        inside = (values >= bound.low) & (values <= bound.high)
        if name in SHAPE_COLUMNS:  # empty: the named model's value (documented)
            inside |= np.isnan(values) & named.to_numpy()
        assert inside.all(), name
    flags = result["extrapolation"].astype("string").fillna("")
    above = (result["mfu"] > 1) | (result["hfu"] > 1)
    assert flags[above].str.contains("fu:").all()
    return result


@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), skip=st.booleans())
def test_damaged_tables_never_crash_nor_return_a_wrong_number(table: pd.DataFrame, skip: bool):
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / "in.csv", Path(folder) / "out.csv"
        table.to_csv(path, index=False)
        status = main(["predict", str(path), "-o", str(out), *(["--skip-invalid"] if skip else [])])
        assert status in (0, 2)
        if skip:
            assert status == 0
            result = _check_output(out)
            rejects = pd.read_csv(Path(folder) / "out.rejects.csv")
            assert len(result) + rejects["row"].nunique() == len(table)
            assert set(rejects["reason"].fillna("")).isdisjoint({""})
        elif status == 0:
            assert len(_check_output(out)) == len(table)
        else:
            assert not out.exists()
