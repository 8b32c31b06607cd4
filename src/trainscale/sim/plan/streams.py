"""What the communication stream costs the compute stream: the helpers every parallelism shares.

A collective evaluated only on the rows that run it (:func:`only_where`), a stream that prefetches
one block ahead (:func:`prefetched`) and a bucketed collective overlapped with a compute window
(:func:`bucketed`). Arrays are float64 of shape ``(n,)``, one element per configuration; times in
seconds, sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from trainscale.sim.system.collectives import Network

__all__ = ["bucketed", "only_where", "prefetched"]


def only_where(
    mask: np.ndarray,
    collective: Callable[..., np.ndarray],
    size: ArrayLike,
    n: ArrayLike,
    g: ArrayLike,
    net: Network,
) -> np.ndarray:
    """``collective(size, n, g, net)`` evaluated on the rows in ``mask`` only, 0 elsewhere (a
    sweep where few rows use a collective does not pay for it on every row)."""
    out = np.zeros(len(mask))
    rows = np.flatnonzero(mask)
    if rows.size:
        size, n, g = (np.broadcast_to(np.asarray(a, dtype=np.float64), mask.shape)[rows]
                      for a in (size, n, g))  # fmt: skip
        out[rows] = collective(size, n, g, net.take(rows))
    return out


def prefetched(
    first: ArrayLike, per_block: ArrayLike, critical: ArrayLike, blocks: ArrayLike
) -> np.ndarray:
    """What a communication stream that prefetches one block ahead adds to ``blocks`` identical
    blocks (seconds): the ``first`` collective, which nothing hides, then whatever of each later
    block's ``per_block`` collectives outlasts the block before it on the ``critical`` path."""
    return first + (blocks - 1) * np.maximum(per_block - critical, 0.0)


def bucketed(
    size: ArrayLike,
    bucket: ArrayLike,
    collective: Callable[[np.ndarray], np.ndarray],
    window: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """Bucketed collective of ``size`` bytes overlapped with a compute ``window``.

    Returns (busy, exposed): all buckets' time, and what the window cannot cover (at least the
    last bucket, which starts when the window ends).
    """
    buckets = np.maximum(np.ceil(size / bucket), 1.0)
    per_bucket = collective(size / buckets)
    busy = buckets * per_bucket
    exposed = np.maximum(per_bucket, busy - window * (1.0 - 1.0 / buckets))
    return busy, np.where(size > 0, exposed, 0.0)
