"""``Configs`` is composed of its model, plan, stack and system parts (sim/configs/arrays.py)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pandas as pd

from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.configs import build_configs
from trainscale.sim.configs.arrays import FIELD_NAMES, PART_FIELDS, Configs, compose

CATALOGUE = load_catalogue()


def _configs() -> Configs:
    rows = [
        {"model": model, "seq_len": 4096, "global_batch": 512, "micro_batch": 1,
         "gpu": gpu, "num_gpus": num_gpus, "tp": 2, "pp": 1, "sharding": "fsdp",
         "recompute": "none", "precision": "bf16"}
        for model, gpu, num_gpus in (
            ("llama2-7b", "h100-sxm-80gb", 16), ("llama2-13b", "a100-sxm-80gb", 32),
            ("llama2-7b", "b200", 64),
        )
    ]  # fmt: skip
    configs, valid, _ = build_configs(
        pd.DataFrame(rows), hardware=CATALOGUE.hardware, models=CATALOGUE.models,
        frameworks=CATALOGUE.frameworks,
    )  # fmt: skip
    assert list(valid) == [0, 1, 2]
    return configs


def test_each_field_belongs_to_one_part() -> None:
    assert len(FIELD_NAMES) == len(set(FIELD_NAMES))
    counted = sum(len(fields(getattr(_configs(), part))) for part in set(PART_FIELDS.values()))
    assert counted == len(FIELD_NAMES)
    assert PART_FIELDS["layers"] == "model" and PART_FIELDS["tp"] == "plan"
    assert PART_FIELDS["framework"] == "stack" and PART_FIELDS["hbm_bytes"] == "system"


def test_parts_hold_the_rows_values() -> None:
    c = _configs()
    assert len(c) == 3
    assert list(c.model.layers) == [32, 40, 32]
    assert list(c.plan.num_gpus) == [16, 32, 64]
    gpus = ("h100-sxm-80gb", "a100-sxm-80gb", "b200")
    assert list(c.system.name) == [CATALOGUE.hardware.default_system[g] for g in gpus]


def test_take_selects_the_same_rows_in_every_part() -> None:
    c = _configs()
    picked = c.take(np.array([2, 0]))
    flat, all_rows = picked.flat(), c.flat()
    for name in FIELD_NAMES:
        assert np.array_equal(np.asarray(flat[name]), np.asarray(all_rows[name])[[2, 0]]), name


def test_flat_and_compose_round_trip() -> None:
    c = _configs()
    again = compose(c.flat())
    for name, value in again.flat().items():
        assert np.array_equal(np.asarray(value), np.asarray(c.flat()[name])), name
