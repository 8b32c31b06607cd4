"""BenchConfig and plan_bench: every impossible run is rejected before anything starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainscale.bench.config import SHAPE_FIELDS, BenchConfig, plan_bench
from trainscale.errors import TrainscaleError
from trainscale.sim.model.params import TransformerShape

SHAPE = TransformerShape(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=256, swiglu=True)
BASE = dict(
    out_dir=Path("x"),
    run_id="x",
    description="d",
    model="",
    shape=SHAPE,
    seq_len=128,
    micro_batch=2,
    global_batch=None,
    steps=10,
    warmup_steps=3,
)


def config(**changes) -> BenchConfig:
    """The base configuration with ``changes``; a shape field's change changes the shape."""
    shape = {name: changes.pop(name) for name in SHAPE_FIELDS if name in changes}
    return BenchConfig(**{**BASE, "shape": dataclasses.replace(SHAPE, **shape), **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden": 66}, "hidden 66 must divide by heads 4 into an even head width"),
        ({"kv_heads": 3}, "heads 4 must divide by kv_heads 3"),
        ({"tp": 4}, "tp 4 must divide heads 4, kv_heads 2 and ffn 128"),
        ({"warmup_steps": 10}, "warmup_steps 10 must be >= 0 and < steps 10"),
        ({"profile_steps": 2}, "profiling 2 step(s) needs warmup_steps >= 4"),
        ({"device": "cuda"}, "backend gloo does not run on device cuda"),
        ({"sharding": "ddp", "tp": 2}, "sharding ddp cannot be combined with tp > 1"),
        ({"layers": 0}, "layers must be a positive integer, not 0"),
        ({"shape": dataclasses.replace(SHAPE, swiglu=False)}, "SwiGLU decoders only"),
    ],
)
def test_invalid_configs(changes, message):
    with pytest.raises(TrainscaleError, match=None) as info:
        config(**changes)
    assert message in str(info.value)


def test_plan_splits_the_batch():
    plan = plan_bench(config(global_batch=16, tp=2, kv_heads=2), world_size=8, nodes=2)
    assert (plan.dp, plan.local_batch, plan.grad_accum, plan.tokens_per_step) == (4, 4, 2, 2048)
    assert plan_bench(config(), world_size=2, nodes=1).global_batch == 4  # micro × dp


@pytest.mark.parametrize(
    ("changes", "world", "nodes", "message"),
    [
        (
            {"global_batch": 6},
            2,
            1,
            "global_batch 6 must be a multiple of dp × micro_batch = 2 × 2",
        ),
        ({"tp": 2}, 3, 1, "tp 2 does not divide the world size 3"),
        ({"sharding": "hsdp"}, 4, 1, "hsdp replicates across nodes; needs >= 2 nodes"),
    ],
)
def test_invalid_plans(changes, world, nodes, message):
    with pytest.raises(TrainscaleError) as info:
        plan_bench(config(**changes), world_size=world, nodes=nodes)
    assert message in str(info.value)
