"""The allowed values of the categorical columns, and the integer codes the simulator stores."""

from __future__ import annotations

from enum import IntEnum

SHARDINGS = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp8")
MLP_KINDS = ("swiglu", "gelu")
FRAMEWORKS = ("megatron", "deepspeed", "pytorch")
"""Framework profile keys (data/frameworks.yaml), in the order the simulator's arrays index them."""
SHARD_GRANULARITIES = ("layer", "tensor")
FP8_RECIPES = ("delayed", "current", "tensorwise", "rowwise")
ATTENTION_KERNELS = ("flash2", "fused", "triton")
CP_COMM_TYPES = ("p2p", "all_gather")
SOURCES = ("sim", "measured", "published")


class Sharding(IntEnum):
    """Data-parallel sharding, as the simulator's arrays store it (index into SHARDINGS)."""

    DDP = SHARDINGS.index("ddp")
    ZERO1 = SHARDINGS.index("zero1")
    ZERO2 = SHARDINGS.index("zero2")
    FSDP = SHARDINGS.index("fsdp")
    HSDP = SHARDINGS.index("hsdp")


class Recompute(IntEnum):
    """Activation recomputation, as the simulator's arrays store it (index into
    RECOMPUTE_MODES)."""

    NONE = RECOMPUTE_MODES.index("none")
    SELECTIVE = RECOMPUTE_MODES.index("selective")
    FULL = RECOMPUTE_MODES.index("full")
