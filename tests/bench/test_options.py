"""The bench options are BenchConfig's fields: one flag each, their defaults the fields'."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from trainscale.bench.config import SHAPE_FIELDS, BenchConfig
from trainscale.bench.options import GROUPS, SHAPE_HELP, add_arguments, build_config
from trainscale.errors import TrainscaleError

from .conftest import TINY

#: Every option of ``trainscale bench``, in ``--help`` order (a changed option changes this).
OPTIONS = [
    "--model", "--layers", "--hidden", "--heads", "--kv-heads", "--ffn", "--vocab", "--seq-len",
    "--micro-batch", "--global-batch", "--steps", "--warmup", "--lr", "--seed", "--tp",
    "--sharding", "--device", "--backend", "--threads", "--peak-tflops", "--profile-steps",
    "--power-interval-ms", "--out", "--run-id", "--description",
]  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser


def test_every_field_has_one_option_in_a_group():
    assert list(SHAPE_HELP) == list(SHAPE_FIELDS)
    assert {f.metadata["option"]["group"] for f in dataclasses.fields(BenchConfig)} == set(GROUPS)
    flags = [a.option_strings[0] for a in _parser()._actions if a.option_strings[0] != "-h"]
    assert flags == OPTIONS


def test_options_left_out_take_the_fields_defaults(tmp_path):
    config = build_config(_parser().parse_args([*TINY, "--out", str(tmp_path / "run")]))
    for field in dataclasses.fields(BenchConfig):
        if field.default is not dataclasses.MISSING and not field.metadata["option"]["derived"]:
            assert getattr(config, field.name) == field.default, field.name
    assert (config.backend, config.run_id, config.out_dir) == ("gloo", "run", tmp_path / "run")
    assert config.shape.kv_heads == 2 and config.shape.swiglu is True
    assert config.description.startswith("trainscale bench: 2-layer Llama-style decoder")


def test_derived_and_renamed_options():
    args = _parser().parse_args(
        [*TINY, "--device", "cuda", "--warmup", "7", "--out", "x", "--run-id", "r"]
    )
    config = build_config(args)
    assert (config.backend, config.warmup_steps, config.run_id) == ("nccl", 7, "r")


def test_a_catalogue_model_with_a_field_overridden():
    config = build_config(
        _parser().parse_args(
            ["--model", "llama2-7b", "--layers", "4", "--seq-len", "8", "--out", "x"]
        )
    )
    assert (config.shape.layers, config.shape.hidden, config.shape.kv_heads) == (4, 4096, 32)


def test_a_gelu_model_is_refused():
    with pytest.raises(TrainscaleError, match="has a gelu MLP"):
        build_config(_parser().parse_args(["--model", "mpt-7b", "--seq-len", "8", "--out", "x"]))
