"""The configuration as the simulator resolved it: one function for every caller.

A configuration row may leave fields empty (the model's shape, the GPU's default system, the
framework profile's behaviours, ``cp`` 1 ...); :func:`~trainscale.sim.configs.build_configs`
resolves them into a :class:`~trainscale.sim.configs.Configs`. :func:`resolved_columns` turns
that back into configuration columns, named as in the configuration table
(:data:`trainscale.schema.CONFIGURATION_COLUMNS`, plus the derived ``dp`` and ``grad_accum``),
for the simulator's output (:func:`trainscale.sim.simulate.predict`) and for the published rows
of the dataset (:func:`trainscale.published.rows.published_rows`), so that the two cannot
disagree on what a resolved value is. Each caller asks for the columns it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from trainscale.schema import (
    ATTENTION_KERNELS,
    CP_COMM_TYPES,
    FP8_RECIPES,
    PRECISIONS,
    RECOMPUTE_MODES,
    SHARDINGS,
)
from trainscale.sim.configs import Configs

__all__ = ["RESOLVED_COLUMNS", "StringColumn", "object_strings", "resolved_columns"]

#: Builds a text column from category codes (int array, one per row) and the categories.
StringColumn = Callable[[np.ndarray, Sequence[str]], object]

#: Columns that are a field of a :class:`Configs` part of the same name, as resolved.
_FIELDS = (
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "global_batch",
    "micro_batch", "num_gpus", "gpus_per_node", "tp", "pp", "cp", "vpp", "dp", "grad_accum",
    "ep", "etp", "edp", "sequence_parallel", "power_limit_w", "system", "overlap_grad_reduce",
    "overlap_param_gather", "tp_comm_overlap", "fused_kernels", "repeat_kv",
)  # fmt: skip


#: The categorical columns: name -> (codes, categories) of the rows of a :class:`Configs` and the
#: framework list its ``framework`` codes index, in the catalogue spelling.
_CATEGORIES: dict[str, Callable[[Configs, Sequence[str]], tuple[np.ndarray, Sequence[str]]]] = {
    "mlp": lambda c, _: (np.where(c.model.swiglu, 0, 1), ("swiglu", "gelu")),
    "sharding": lambda c, _: (c.plan.sharding, SHARDINGS),
    "recompute": lambda c, _: (c.plan.recompute, RECOMPUTE_MODES),
    "precision": lambda c, _: (c.plan.fp8.astype(np.int32), PRECISIONS),
    "framework": lambda c, frameworks: (c.stack.framework, frameworks),
    "shard_granularity": lambda c, _: (
        c.stack.per_tensor_gather.astype(np.int32),
        ("layer", "tensor"),
    ),
    "attention_kernel": lambda c, _: (c.stack.attention_kernel, ATTENTION_KERNELS),
    # bf16 rows have no FP8 recipe: the empty category after the recipes.
    "fp8_recipe": lambda c, _: (
        np.where(c.plan.fp8, c.stack.fp8_recipe, len(FP8_RECIPES)),
        (*FP8_RECIPES, ""),
    ),
    "cp_comm_type": lambda c, _: (c.stack.cp_comm_type, CP_COMM_TYPES),
}

#: Every column :func:`resolved_columns` can give.
RESOLVED_COLUMNS = (*_FIELDS, "nic_gbit_per_s_per_gpu", *_CATEGORIES)


def object_strings(codes: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """A text column as a numpy object array of Python strings."""
    return np.asarray(list(categories), dtype=object)[np.asarray(codes, dtype=np.intp)]


def resolved_columns(
    c: Configs,
    columns: Iterable[str],
    *,
    framework_keys: Sequence[str],
    strings: StringColumn = object_strings,
) -> dict[str, object]:
    """The named configuration columns of the rows of ``c`` as resolved, in the order asked.

    Numbers and flags are ``c``'s arrays; ``nic_gbit_per_s_per_gpu`` is Gb/s per GPU (``c``
    holds bytes/s); text columns are built by ``strings`` from codes and categories (default:
    object arrays; the simulator passes an Arrow-backed builder for speed); ``framework`` names
    the codes by ``framework_keys``, the framework list of the catalogue ``c`` was built from
    (``Catalogue.framework_keys``). An unknown name is
    a ``KeyError`` naming it and :data:`RESOLVED_COLUMNS`.
    """
    flat = c.flat()
    out: dict[str, object] = {}
    for name in columns:
        if name in _FIELDS:
            out[name] = flat[name]
        elif name == "nic_gbit_per_s_per_gpu":
            out[name] = c.system.nic_bytes_per_s * 8 / 1e9
        elif name in _CATEGORIES:
            out[name] = strings(*_CATEGORIES[name](c, framework_keys))
        else:
            raise KeyError(f"{name!r} is not a resolved column; known: {RESOLVED_COLUMNS}")
    return out
