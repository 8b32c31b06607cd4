"""The allowed values of the categorical columns, and the integer codes the simulator stores."""

from __future__ import annotations

from enum import IntEnum

SHARDINGS = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp8")
MLP_KINDS = ("swiglu", "gelu")
DEFAULT_FRAMEWORK = "pytorch"
"""A configuration without a ``framework`` runs PyTorch (DDP/FSDP): the stack of the paper that
trainscale reproduces (Fernandez et al. trained with PyTorch FSDP) and of most published runs
(``workflow/schemas/frameworks.schema.yaml`` requires its profile).

Decision: there is no framework list here. The framework list is catalogue data, written once,
in ``frameworks.yaml``: the profile keys of the catalogue the caller passes
(:attr:`trainscale.sim.catalogue.Catalogue.framework_keys`, in file order; shipped: megatron,
deepspeed, pytorch), so no module reads a data file at import and a computation reads the
catalogue its caller named. :func:`~trainscale.sim.configs.build_configs` codes each row's
framework as an index into those keys; the calibration's offsets
(:class:`~trainscale.sim.calibration.Calibration`), the interval and support facts and the
published-data readers take the same keys from their caller. Adding a profile to the file is
therefore enough for the simulator and the calibration (``docs/recipes/
add-a-framework-behaviour.md``). The JSON Schemas are files, not Python: the ``framework`` enums
of ``workflow/schemas/run.schema.yaml`` and ``study.schema.yaml`` name the same keys, and
``tests/sim/test_catalogues.py`` checks that they agree with the shipped catalogue."""
SHARD_GRANULARITIES = ("layer", "tensor")
FP8_RECIPES = ("delayed", "current", "tensorwise", "rowwise")
ATTENTION_KERNELS = ("flash2", "fused", "triton")
CP_COMM_TYPES = ("p2p", "all_gather")
MOE_ROUTINGS = ("dropless", "balanced", "capacity")
"""How a mixture-of-experts router spreads tokens over the experts
(:mod:`trainscale.sim.model.routing`): a trained router without dropping (the default; the
busiest expert-parallel rank sets the pace), forced uniform, or a capacity per expert (tokens
above it dropped, every expert padded to it)."""
MOE_DISPATCHERS = ("alltoall", "allgather", "deepep")
"""How tokens reach their experts and come back (:mod:`trainscale.sim.system.alltoall`):
Megatron-Core's ``--moe-token-dispatcher-type`` alltoall and allgather, or DeepEP's normal
kernels (``flex`` with DeepEP in Megatron-Core; torchtitan's DeepEP integration)."""
FINETUNE_MODES = ("none", "lora", "full")
"""Training mode: pretraining or full fine-tuning (every weight trained: the same work), or LoRA
(frozen base weights, trained low-rank adapters; :mod:`trainscale.sim.model.finetune`)."""
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
