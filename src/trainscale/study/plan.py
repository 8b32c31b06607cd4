"""A plan search as a study: what ``trainscale plan`` asks, written as the study it runs.

:class:`PlanRequest` holds the question (model, GPUs, GPU counts, global batch, framework and the
plan space searched); :func:`plan_study` turns it into the :class:`~trainscale.study.spec.Study`
whose grid is that space, so that the search is expanded, filtered (memory, tensor parallelism
within a node, invalid layouts) and simulated by exactly the machinery of a study file
(:mod:`trainscale.study.rules`, :mod:`trainscale.study.simulate`), and its points are the study
points table's (:mod:`trainscale.tables.study_points`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainscale.errors import TrainscaleError
from trainscale.study.spec import AUTO, Filters, Study

__all__ = ["DEFAULT_SEARCH", "PlanRequest", "parse_batch_tokens", "plan_study"]

#: The plan space searched by default, per configuration column (every combination; the
#: simulator's validator drops the layouts that do not divide the model or the GPUs).
DEFAULT_SEARCH: Mapping[str, tuple[Any, ...]] = {
    "tp": (1, 2, 4, 8),
    "pp": (1, 2, 4, 8, 16),
    "vpp": (1, 2, 4),
    "cp": (1, 2),
    "sharding": ("ddp", "zero1", "fsdp", "hsdp"),
    "recompute": ("none", "selective", "full"),
    "micro_batch": (1, 2, AUTO),
}

_SUFFIX = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_batch_tokens(text: str) -> int:
    """A token count: an integer, or one with a binary suffix ``K`` (2^10), ``M`` (2^20) or ``G``
    (2^30), as batches are quoted (``4M`` = 4,194,304 = 512 sequences of 8,192)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*", str(text))
    if not match:
        raise TrainscaleError(
            f"global batch {text!r}: expected a whole number of tokens, optionally with K, M or G "
            "(powers of 1024), e.g. 4M"
        )
    value = float(match.group(1)) * _SUFFIX[match.group(2).lower()]
    if value != int(value) or value < 1:
        raise TrainscaleError(f"global batch {text!r} is not a whole number of tokens")
    return int(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRequest:
    """One plan search (``trainscale plan``)."""

    model: str
    """Model catalogue key."""
    gpus: tuple[str, ...]
    """GPU catalogue keys, each searched on its catalogue system."""
    num_gpus: tuple[int, ...]
    """GPU counts."""
    seq_len: int
    """Tokens per sequence."""
    global_batch_tokens: int | None = None
    """Global batch in tokens (``global_batch = global_batch_tokens / seq_len``), or None when
    :attr:`global_batch` is given."""
    global_batch: int | None = None
    """Global batch in sequences."""
    framework: str = "megatron"
    precision: str = "bf16"
    search: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: dict(DEFAULT_SEARCH))
    """Configuration column -> values searched (defaults: :data:`DEFAULT_SEARCH`)."""


def plan_study(request: PlanRequest) -> Study:
    """The study whose grid is the request's plan space: GPU × GPU count × every searched
    column, ``fits_memory`` and ``max_tp_per_node`` filters, invalid layouts dropped; its report
    has the GPU as series, the GPU count as x and every searched column as ``best_of``."""
    if (request.global_batch is None) == (request.global_batch_tokens is None):
        raise TrainscaleError("give the global batch in tokens or in sequences (one of them)")
    fixed: dict[str, Any] = {
        "model": request.model, "seq_len": request.seq_len, "precision": request.precision,
        "framework": request.framework,
    }  # fmt: skip
    if request.global_batch is not None:
        fixed["global_batch"] = request.global_batch
    sweep: dict[str, list[Any]] = {
        "gpu": list(request.gpus),
        "num_gpus": list(request.num_gpus),
        **{key: list(values) for key, values in request.search.items()},
    }
    searched = [key for key, values in request.search.items() if len(values) > 1]
    report: dict[str, Any] = {"x": "num_gpus", "best_of": searched, "series": []}
    if len(request.gpus) > 1:
        report["series"] = ["gpu"]
    if len(request.num_gpus) < 2:
        raise TrainscaleError("give at least two GPU counts (--num-gpus 512 1024 ...)")
    derive = (
        {"global_batch_tokens": request.global_batch_tokens}
        if request.global_batch_tokens is not None
        else {}
    )
    return Study(
        name="plan",
        path="trainscale plan",
        description=f"best plan of {request.model} on {', '.join(request.gpus)}",
        fixed=fixed,
        sweep=sweep,
        derive=derive,
        filters=Filters(fits_memory=True, max_tp_per_node=True),
        report=report,
    )
