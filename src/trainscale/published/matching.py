"""Free text of the published CSV -> catalogue keys: GPUs, models, framework profiles, and the
sharding, recomputation, precision and network wording.

This is the one place where a source's wording (``H100-80GB``, ``PyTorch FSDP FULL_SHARD``,
``full AC (per block)``) is mapped to a key of the catalogues or the schema. GPU and model
wording is catalogue data: each GPU's ``aliases`` in ``data/hardware.yaml`` and each model's
``aliases`` in ``data/models.yaml``, passed in by the caller; framework wording is the
``frameworks`` list of ``data/published/sources.yaml``. Every function takes the CSV field
as text (``""`` where empty).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainscale.published.sources import FrameworkPattern
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "FrameworkNotMapped",
    "fabric",
    "framework_profile",
    "gpu_key",
    "model_key",
    "nic_gbit_per_s_per_gpu",
    "power_limit_w",
    "precision",
    "recompute",
    "sharding",
]


class FrameworkNotMapped(ValueError):
    """A framework text that :func:`framework_profile` cannot map to a profile."""


def gpu_key(text: str, hardware: HardwareCatalog) -> str | None:
    """The key of the GPU of ``hardware`` whose ``aliases`` match a source's GPU description
    (:meth:`~trainscale.sim.system.hardware.HardwareCatalog.gpu_for_text`: the longest match),
    or None."""
    return hardware.gpu_for_text(text)


def model_key(text: str, models: Mapping[str, ModelShape]) -> str | None:
    """The key of the model of ``models`` one of whose ``aliases`` is a source's model name
    (exactly, case-sensitive), or None (the shape then comes from the row)."""
    name = text or ""
    return next((key for key, shape in models.items() if name in shape.aliases), None)


def framework_profile(
    text: str,
    sharding: str = "",
    notes: str = "",
    *,
    patterns: Sequence[FrameworkPattern],
    profiles: Sequence[str] = (),
) -> str:
    """The framework profile key for a source's framework text.

    ``patterns`` are the ``frameworks`` entries of ``sources.yaml``
    (:attr:`trainscale.published.sources.Sources.frameworks`), tried in order on the lower-cased
    text; ``profiles``: the framework list they were checked against
    (:attr:`~trainscale.published.sources.Sources.profiles`), named in that order when no
    pattern matches (empty: the profiles the patterns name); an entry's ``unless`` pattern,
    searched in ``sharding`` and ``notes``, breaks ties the framework text alone does not decide
    (e.g. "Megatron-LM" with sharding "ZeRO-3").
    Raises :class:`FrameworkNotMapped` for text no pattern recognises.
    """
    framework = (text or "").strip()
    context = f"{sharding} {notes}".lower()
    for entry in patterns:
        if framework and re.search(entry.pattern, framework.lower()):
            if entry.unless_pattern and re.search(entry.unless_pattern, context):
                return entry.unless_profile
            return entry.profile
    known = tuple(profiles) or tuple(dict.fromkeys(entry.profile for entry in patterns))
    order = {profile: i for i, profile in enumerate(known)}
    described = sorted(patterns, key=lambda entry: order.get(entry.profile, len(order)))
    raise FrameworkNotMapped(
        f"framework {framework!r} is not mapped to a profile; known: "
        + ", ".join(known)
        + " ("
        + "; ".join(entry.describes for entry in described)
        + ")"
    )


def sharding(text: str) -> str | None:
    """ddp, zero2, hsdp or fsdp; None for CPU offload or wording no rule knows."""
    t = (text or "").lower()
    if "cpu offload" in t:
        return None
    if re.search(r"fsdp\s*=\s*0", t):  # Megatron-Bridge "DDP (FSDP=0)"
        return "ddp"
    if "shard_grad_op" in t or "not resharded" in t:
        return "zero2"
    if "hybrid" in t:
        return "hsdp"
    if "zero-3" in t or "fsdp" in t or "full_shard" in t:
        return "fsdp"
    if "none" in t or "all-reduce" in t or t == "":
        return "ddp"
    return None


def recompute(text: str) -> str:
    """selective, full or none."""
    t = (text or "").lower()
    if "selective" in t:
        return "selective"
    if "full" in t or "checkpointing" in t:
        return "full"
    return "none"


def precision(text: str) -> str:
    """fp8 where the text says so, else bf16."""
    return "fp8" if "fp8" in (text or "").lower() else "bf16"


def power_limit_w(text: str) -> float:
    """A board power limit stated with the GPU ("500W power limit"), else 0 (the TDP)."""
    match = re.search(r"(\d+)\s*W\s+power\s+limit", text or "", flags=re.IGNORECASE)
    return float(match.group(1)) if match else 0.0


def nic_gbit_per_s_per_gpu(text: str, gpus_per_node: int) -> float | None:
    """Per-GPU NIC line rate in Gb/s from a free-text inter-node description."""
    t = text or ""
    if m := re.search(r"(\d+)\s*Gb(?:ps|/s)? per GPU", t, flags=re.IGNORECASE):
        return float(m.group(1))
    if m := re.search(r"(\d+)\s*x\s*(\d+)\s*Gbps per node", t, flags=re.IGNORECASE):
        return float(m.group(1)) * float(m.group(2)) / gpus_per_node
    if m := re.search(r"(\d+)\s*Gbps (?:per node|inter-node)", t, flags=re.IGNORECASE):
        return float(m.group(1)) / gpus_per_node
    if m := re.search(r"(\d+)\s*GB/s per server", t):
        return float(m.group(1)) * 8 / gpus_per_node
    if m := re.search(r"EFA (\d+)\s*x\s*(\d+)\s*Gbps", t):
        return float(m.group(1)) * float(m.group(2)) / gpus_per_node
    if m := re.search(r"EFA (\d+)\s*Gbps per node", t):
        return float(m.group(1)) / gpus_per_node
    if "TCPXO" in t:
        return 1600.0 / gpus_per_node  # a3-mega: 8 x 200 Gb/s per node (not stated in the file)
    return None


def fabric(text: str) -> str:
    """infiniband, roce, efa or ethernet from an inter-node description."""
    t = (text or "").lower()
    if "efa" in t:
        return "efa"
    if "roce" in t or "tcpxo" in t:
        return "roce"
    if "ethernet" in t or "tcp/ip" in t:
        return "ethernet"
    return "infiniband"
