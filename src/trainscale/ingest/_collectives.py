"""Canonical collective names shared by the trace and nccl-tests parsers.

Profiler traces spell a collective ``allreduce`` (``args["Collective name"]``),
``_allgather_base`` or ``AllReduce`` (kernel names); nccl-tests names its binaries
``all_reduce_perf``. All of them map to one lower-case name without separators, matching the
result table's ``allreduce_s`` / ``allgather_s`` / ``reducescatter_s`` columns.
"""

from __future__ import annotations

import re

__all__ = ["UNKNOWN_COLLECTIVE", "canonical_collective", "collective_from_kernel_name"]

#: Name used when a communication kernel carries no recognisable collective.
UNKNOWN_COLLECTIVE = "unknown"

#: Canonical name → every spelling of it (lower case, separators removed) the parsers meet.
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "allreduce": ("allreducecoalesced",),
    "allgather": (
        "allgatherbase",
        "allgatherintotensor",
        "allgatherintotensorcoalesced",
        "allgathercoalesced",
    ),
    "reducescatter": ("reducescatterbase", "reducescattertensor", "reducescattertensorcoalesced"),
    "broadcast": ("broadcastcoalesced",),
    "sendrecv": (),
    "send": (),
    "recv": (),
    "alltoall": ("alltoallbase", "alltoallv"),
    "reduce": (),
    "gather": (),
    "scatter": (),
    "barrier": (),
}
_ALIASES: dict[str, str] = {
    spelling: name for name, spellings in _SPELLINGS.items() for spelling in (name, *spellings)
}

_KERNEL_RE = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")


def canonical_collective(name: object) -> str:
    """Return the canonical collective name for a trace or nccl-tests spelling.

    Parameters
    ----------
    name
        ``"allreduce"``, ``"_allgather_base"``, ``"ReduceScatter"``, ``"all_reduce_perf"``, …

    Returns
    -------
    str
        Lower case without separators (``"allreduce"``, ``"reducescatter"``, ``"sendrecv"``);
        an unrecognised name is returned lower-cased without separators, an empty or non-string
        one as ``"unknown"``.
    """
    if not isinstance(name, str):
        return UNKNOWN_COLLECTIVE
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    key = key.removesuffix("perf")
    if not key:
        return UNKNOWN_COLLECTIVE
    return _ALIASES.get(key, key)


def collective_from_kernel_name(kernel_name: str) -> str:
    """Return the collective encoded in an NCCL kernel name, or ``"unknown"``.

    ``ncclKernel_AllReduce_RING_LL_Sum_float(...)`` → ``"allreduce"``;
    ``ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)`` → ``"reducescatter"``;
    ``ncclDevKernel_Generic`` (recent NCCL) → ``"unknown"``.
    """
    match = _KERNEL_RE.match(kernel_name)
    if match is None:
        return UNKNOWN_COLLECTIVE
    word = match.group(1).lower()
    return _ALIASES.get(word, UNKNOWN_COLLECTIVE)
