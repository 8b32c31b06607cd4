"""Table ``models``: the model catalogue's shapes and parameter counts.

One row per model of ``data/models.yaml``, smallest first. Parameter counts are derived from the
shape (:mod:`trainscale.sim.model.shape`), never stored: ``params_b`` counts every weight (blocks,
final norm, embeddings), ``active_params_b`` those one token passes through (the total for a dense
model), ``layer_params_m`` one transformer block's matrices — what FSDP gathers per layer; for an
MoE model, one MoE block with every expert. ``num_experts`` and ``experts_per_token`` are 0 for a
dense model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from trainscale.schema import MODEL_COLUMNS, names
from trainscale.sim.model.counts import block_norm_params, block_params
from trainscale.sim.model.params import matrix_params_per_layer
from trainscale.sim.model.shape import ModelShape

__all__ = ["models_table", "render"]


def models_table(models: Mapping[str, ModelShape]) -> pd.DataFrame:
    """The model table (see module docstring) of ``models``, the model catalogue its caller
    loaded (``data/models.yaml``), with :data:`trainscale.schema.MODEL_COLUMNS`; ``params_b`` in
    billions, ``layer_params_m`` in millions."""
    rows = []
    for key, m in models.items():
        if m.plain:
            layer = float(matrix_params_per_layer(m.transformer))
        else:  # the block's matrices: its parameters less its norms
            layer = float(block_params(m, moe_block=m.moe is not None) - block_norm_params(m))
        rows.append(
            {
                "model": key,
                "layers": m.layers,
                "hidden": m.hidden,
                "heads": m.heads,
                "kv_heads": m.kv_heads,
                "ffn": m.ffn,
                "vocab": m.vocab,
                "mlp": m.mlp,
                "tied_embeddings": m.tied_embeddings,
                "params_b": m.params / 1e9,
                "active_params_b": m.active_params / 1e9,
                "num_experts": 0 if m.moe is None else m.moe.num_experts,
                "experts_per_token": 0 if m.moe is None else m.moe.experts_per_token,
                "layer_params_m": layer / 1e6,
            }
        )
    table = pd.DataFrame(rows, columns=names(MODEL_COLUMNS))
    return table.sort_values(["params_b", "model"], kind="stable").reset_index(drop=True)


def render(stem: str | os.PathLike[str], *, models: Mapping[str, ModelShape]) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}`` for ``models`` (the model catalogue)."""
    from trainscale.report import write_table

    return write_table(
        models_table(models),
        stem,
        label="tab:models",
        caption="Model shapes (data/models.yaml, with sources) and parameter counts derived "
        "from them.",
        float_format={"params_b": ".2f", "active_params_b": ".2f", "layer_params_m": ".1f"},
    )
