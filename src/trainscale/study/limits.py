"""Start-up limits on the products of a study's numbers (tokens per step, derived batches).

The study schema (``workflow/schemas/study.schema.yaml``) bounds every numeric key on its own
(``seq_len`` at most 2^24, ``global_batch`` at most 2^30, ...). A study can still combine values
that are each plausible into an impossible row: 2^24-token sequences in batches of 2^30
sequences are 2^54 tokens per step, and ``derive`` can produce a ``global_batch`` no key bounds.
:func:`product_problems` finds these at start-up, before any row of the grid is built.

Because the grid is the cartesian product of the sweep axes, the largest value of a product of
positive columns over the grid is the product of each column's largest value (and the largest
dp is the largest ``num_gpus`` over the smallest ``tp``, ``pp`` and ``cp``): one exact
calculation in Python integers per product, whatever the grid size. The message names the keys
that give each factor and the bound.

Bounds (inclusive), chosen far above any published training run and so that every product the
simulator forms in 64-bit integers stays below 2^63:

- tokens per step, ``seq_len`` · ``global_batch``: at most :data:`MAX_TOKENS_PER_STEP` = 2^40
  (about 1.1·10^12 tokens; Llama 3 405B trained with 16 M);
- a derived ``global_batch`` (``derive``): at most :data:`MAX_GLOBAL_BATCH` = 2^30 sequences,
  the bound the schema puts on a given one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_GLOBAL_BATCH", "MAX_TOKENS_PER_STEP", "product_problems"]

#: Most tokens one optimizer step may hold (``seq_len`` · ``global_batch``), 2^40.
MAX_TOKENS_PER_STEP = 2**40
#: Most sequences per step, the schema's bound on ``global_batch``; a derived one is held to it.
MAX_GLOBAL_BATCH = 2**30


def _extreme(
    fixed: Mapping[str, Any], sweep: Mapping[str, Any], column: str, largest: bool
) -> tuple[int, str] | None:
    """The largest (or smallest) integer value of ``column`` in the grid and the key giving it,
    e.g. ``(8192, "sweep.seq_len[2]")``; None when the column is absent or has no integer."""
    places = [(f"fixed.{column}", fixed[column])] if column in fixed else []
    values = sweep.get(column)
    if isinstance(values, list):
        places += [(f"sweep.{column}[{i}]", v) for i, v in enumerate(values)]
    numbers = [(v, key) for key, v in places if isinstance(v, int) and not isinstance(v, bool)]
    if not numbers:
        return None
    value, key = (max if largest else min)(numbers, key=lambda item: item[0])
    return value, key


def _global_batch(
    fixed: Mapping[str, Any], sweep: Mapping[str, Any], derive: Mapping[str, Any]
) -> tuple[int, str, list[tuple[str, str]]] | None:
    """The grid's largest ``global_batch`` (given or derived), the keys it comes from, and the
    problem when a derived one exceeds :data:`MAX_GLOBAL_BATCH`."""
    given = _extreme(fixed, sweep, "global_batch", largest=True)
    if given is not None:
        return given[0], given[1], []
    if derive.get("global_batch_tokens") is not None:
        tokens = derive["global_batch_tokens"]
        shortest = _extreme(fixed, sweep, "seq_len", largest=False)
        if not isinstance(tokens, int) or shortest is None:
            return None
        value, keys = tokens // shortest[0], f"derive.global_batch_tokens / {shortest[1]}"
    elif derive.get("sequences_per_dp_rank") is not None:
        per_rank = derive["sequences_per_dp_rank"]
        gpus = _extreme(fixed, sweep, "num_gpus", largest=True)
        smallest = [_extreme(fixed, sweep, c, largest=False) for c in ("tp", "pp", "cp")]
        if not isinstance(per_rank, int) or gpus is None:
            return None
        degree = 1
        for part in smallest:
            degree *= part[0] if part is not None else 1
        value = per_rank * max(gpus[0] // degree, 1)
        keys = f"derive.sequences_per_dp_rank · dp (dp up to {gpus[1]} / (tp·pp·cp))"
    else:
        return None
    problems = []
    if value > MAX_GLOBAL_BATCH:
        key = next(iter(k for k in derive if derive[k] is not None))
        problems.append(
            (f"derive.{key}", f"derives a global_batch of up to {value:,} sequences "
             f"({keys}), above the most allowed, 2^30 = {MAX_GLOBAL_BATCH:,}")
        )  # fmt: skip
    return value, keys, problems


def product_problems(data: Mapping[str, Any], reported: set[str]) -> list[tuple[str, str]]:
    """``(key, message)`` for every product bound a study file breaks (see the module).

    ``data`` is the study file as loaded; sections of the wrong shape and keys in ``reported``
    (already reported by the schema, e.g. a value above its own bound) are skipped, so each
    problem is reported once.
    """

    def section(name: str) -> dict[str, Any]:
        value = data.get(name)
        return value if isinstance(value, dict) else {}

    fixed, sweep, derive = section("fixed"), section("sweep"), section("derive")
    for name in ("seq_len", "global_batch", "num_gpus", "tp", "pp", "cp"):
        if any(k == f"fixed.{name}" or k.startswith(f"sweep.{name}") for k in reported):
            return []  # the factor itself is out of range: fix that first
    if any(k.startswith("derive") for k in reported):
        return []
    batch = _global_batch(fixed, sweep, derive)
    if batch is None:
        return []
    largest_batch, batch_keys, problems = batch
    if problems:
        return problems
    longest = _extreme(fixed, sweep, "seq_len", largest=True)
    if longest is None:
        return []
    tokens = longest[0] * largest_batch
    if tokens > MAX_TOKENS_PER_STEP:
        key = longest[1] if "derive" in batch_keys else batch_keys
        problems.append(
            (key, f"tokens per step seq_len · global_batch reach {longest[0]:,} ({longest[1]}) "
             f"· {largest_batch:,} ({batch_keys}) = {tokens:,}, above the most allowed, "
             f"2^40 = {MAX_TOKENS_PER_STEP:,}")
        )  # fmt: skip
    return problems
