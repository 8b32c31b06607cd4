"""The allowed values of the categorical columns, and the integer codes the simulator stores."""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path

import yaml

from trainscale.paths import data_dir

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def framework_keys(path: Path) -> tuple[str, ...]:
    """The profile keys of the framework catalogue ``path``, in file order; ``()`` where the file
    cannot be read or has no ``profiles`` mapping (its loader,
    :func:`trainscale.sim.frameworks.load_frameworks`, then reports the problem with its line)."""
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ()
    profiles = document.get("profiles") if isinstance(document, dict) else None
    return tuple(str(key) for key in profiles) if isinstance(profiles, dict) else ()


SHARDINGS = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
RECOMPUTE_MODES = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp8")
MLP_KINDS = ("swiglu", "gelu")
FRAMEWORKS: tuple[str, ...] = framework_keys(data_dir() / "frameworks.yaml")
"""Framework profile keys, in the order the simulator's arrays index them: the keys of
``profiles`` in the data folder's ``frameworks.yaml`` (:func:`trainscale.paths.data_dir`:
``data/``, or ``TRAINSCALE_DATA``), read once at import, in file order (shipped: megatron,
deepspeed, pytorch).

Decision: the framework list is catalogue data, written once, in ``data/frameworks.yaml``; every
list of framework names in the code is this tuple (the calibration's per-framework offsets, the
command-line choices, the published-text matching, the interval facts). Adding a profile to the
file is therefore enough for the simulator and the calibration (``docs/recipes/
add-a-framework-behaviour.md``). The JSON Schemas are files, not Python: the ``framework`` enums of
``workflow/schemas/run.schema.yaml`` and ``study.schema.yaml`` name the same keys, and
``tests/sim/test_catalogues.py`` checks that they and the catalogue agree with this tuple. A
framework catalogue loaded from another folder must hold the same keys
(:func:`~trainscale.sim.frameworks.load_frameworks` says so); to run with other profiles, point
``TRAINSCALE_DATA`` at their folder."""
DEFAULT_FRAMEWORK = "pytorch"
"""A configuration without a ``framework`` runs PyTorch (DDP/FSDP): the stack of the paper that
trainscale reproduces (Fernandez et al. trained with PyTorch FSDP) and of most published runs
(``workflow/schemas/frameworks.schema.yaml`` requires its profile)."""
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
