"""The model of every row: the catalogue's shape, overridden by explicit shape columns."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.io.suggest import did_you_mean
from trainscale.schema import (
    MODEL_SHAPE_COLUMNS,
    NUMERIC_BOUNDS,
)
from trainscale.sim.cells import numeric as _numeric
from trainscale.sim.cells import value_problem as _value_problem
from trainscale.sim.cells import within as _within
from trainscale.sim.configs.columns import coded_text, missing_mask, per_row
from trainscale.sim.configs.problems import INT_SHAPE, Problems
from trainscale.sim.model.counts import active_matmul_params, block_params
from trainscale.sim.model.shape import ModelShape

__all__ = ["MOE_SHAPE", "check_columns", "resolve_shape"]


_SHAPE_NAMES = tuple(c.name for c in MODEL_SHAPE_COLUMNS)
_REQUIRED = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip


def check_columns(frame: pd.DataFrame) -> None:
    has_model = "model" in frame.columns
    missing = [name for name in _REQUIRED if name not in frame.columns]
    if not has_model:
        missing += [name for name in _SHAPE_NAMES if name not in frame.columns]
    if missing:
        raise ConfigurationError(
            [(
                -1,
                ", ".join(missing),
                "missing column(s); the input needs " + ", ".join(_REQUIRED)
                + " and either 'model' or all of " + ", ".join(_SHAPE_NAMES),
            )]
        )  # fmt: skip


#: The catalogue-only fields of a model (mixture of experts, multi-head latent attention, head
#: width), by ModelArrays name: their value for a catalogue model, 0 for a dense one or a row
#: without ``model`` (``head_dim`` 0 is then ``hidden / heads`` of the row).
_CATALOGUE_ONLY = {
    "head_dim": lambda m: 0 if m.plain else m.head_dim,
    "kv_lora_rank": lambda m: m.mla.kv_lora_rank if m.mla else 0,
    "q_lora_rank": lambda m: (m.mla.q_lora_rank or 0) if m.mla else 0,
    "qk_head_dim": lambda m: m.mla.qk_head_dim if m.mla else 0,
    "qk_rope_dim": lambda m: m.mla.qk_rope_head_dim if m.mla else 0,
    "v_head_dim": lambda m: m.mla.v_head_dim if m.mla else 0,
    "num_experts": lambda m: m.moe.num_experts if m.moe else 0,
    "experts_per_token": lambda m: m.moe.experts_per_token if m.moe else 0,
    "expert_ffn": lambda m: m.moe.expert_ffn if m.moe else 0,
    "shared_ffn": lambda m: m.moe.shared_experts * m.moe.shared_expert_ffn if m.moe else 0,
    "moe_layers": lambda m: m.moe.moe_layers(m.layers) if m.moe else 0,
    "active_matmul_params": lambda m: 0 if m.plain else active_matmul_params(m),
    "block_params": lambda m: 0 if m.plain else _block_params(m),
    "score_width": lambda m: (
        0
        if m.plain
        else m.heads * (2 * m.head_dim if m.mla is None else m.mla.qk_head_dim + m.mla.v_head_dim)
    ),
}


def _block_params(m: ModelShape) -> int:
    """Weights of every transformer block of ``m`` (dense and MoE blocks, all experts)."""
    dense = m.moe.dense_layers if m.moe else m.layers
    return dense * block_params(m, moe_block=False) + (m.layers - dense) * block_params(
        m, moe_block=True
    )


MOE_SHAPE = tuple(_CATALOGUE_ONLY)
"""The model fields that come from the catalogue only (not from shape columns)."""


def _catalogue_only(models: Mapping[str, ModelShape], by_model) -> dict[str, np.ndarray]:
    """The mixture-of-experts, latent-attention and head-width fields of each row's catalogue
    model (:data:`_CATALOGUE_ONLY`), what the plan's expert rules and the step-time model read."""
    return {
        name: by_model({k: int(get(m)) for k, m in models.items()}, 0).astype(np.int64)
        for name, get in _CATALOGUE_ONLY.items()
    }


def _catalogue_shape(
    problems: Problems, name: str, rows: np.ndarray, model, explicit: np.ndarray,
    base: np.ndarray,
) -> None:  # fmt: skip
    """A problem for each of ``rows`` whose shape column ``name`` contradicts its catalogue
    model's, where that model is not a plain dense one: its experts, latent ranks and head
    width are tied to the catalogue's shape."""
    problems.add_where(
        rows, name,
        lambda r: f"{model(r)} is a mixture-of-experts, latent-attention or wide-head model "
        f"whose shape comes from data/models.yaml: {name} {explicit[r]:g} differs from its "
        f"{base[r]:g}; add a catalogue entry for another shape",
    )  # fmt: skip


def resolve_shape(
    frame: pd.DataFrame, models: Mapping[str, ModelShape], problems: Problems
) -> dict[str, np.ndarray]:
    """Shape columns from the catalogue, overridden by explicit columns."""
    codes, uniques = coded_text(frame, "model")

    def by_model(mapping: dict, default: object) -> np.ndarray:
        """``mapping.get(model, default)`` per row, from one factorisation of the model column
        (numbers and flags come back typed, text as objects)."""
        values = [mapping.get(u, default) for u in uniques]
        typed = not any(isinstance(v, str) for v in values)
        return np.array(values, dtype=None if typed else object)[codes]

    named = per_row(codes, uniques, lambda u: u != "")
    known = by_model({k: True for k in models}, False).astype(bool)
    valid_names = ", ".join(sorted(models))
    problems.add_where(
        named & ~known, "model",
        lambda r: f"unknown model {uniques[codes[r]]!r}{did_you_mean(uniques[codes[r]], models)}"
        f"; valid: {valid_names}",
    )  # fmt: skip
    catalogued = named & by_model({k: not m.plain for k, m in models.items()}, False).astype(bool)
    shape: dict[str, np.ndarray] = {}
    for name in INT_SHAPE:
        base = by_model({k: float(getattr(m, name)) for k, m in models.items()}, np.nan).astype(
            np.float64
        )
        explicit = _numeric(frame, name)
        given = ~missing_mask(frame, name)
        values = np.where(given, explicit, base)
        _catalogue_shape(problems, name, given & catalogued & (explicit != base),
                         lambda r: uniques[codes[r]], explicit, base)  # fmt: skip
        # an MoE model whose every block has experts has no dense MLP: ffn 0
        fine = _within(values, NUMERIC_BOUNDS[name]) | (catalogued & (values == 0) & (base == 0))
        bad = ~fine & ~(named & ~known)
        problems.add_where(
            bad, name,
            lambda r, name=name, values=values, given=given: (
                _value_problem(frame, name, r, values[r]) if given[r]
                else "missing; give 'model' or a positive integer " + name
            ),
        )  # fmt: skip
        shape[name] = np.where(fine, values, 1).astype(np.int64)
    # The MLP: the row's text where given, else the model's; resolved on distinct values only.
    mlp_codes, mlp_values = coded_text(frame, "mlp", lower=True)
    base_mlp = [models[u].mlp if u in models else "" for u in uniques]
    given_mlp = per_row(mlp_codes, mlp_values, lambda v: v != "")

    def mlp_is(allowed: tuple[str, ...]) -> np.ndarray:
        return np.where(
            given_mlp,
            per_row(mlp_codes, mlp_values, lambda v: v in allowed),
            per_row(codes, base_mlp, lambda v: v in allowed),
        )

    bad_mlp = ~mlp_is(("swiglu", "gelu")) & ~(named & ~known)
    problems.add_where(
        bad_mlp, "mlp",
        lambda r: f"{mlp_values[mlp_codes[r]] or base_mlp[codes[r]] or 'missing'!r} is not "
        "allowed; allowed: swiglu, gelu",
    )  # fmt: skip
    shape["swiglu"] = mlp_is(("swiglu",))
    shape.update(_catalogue_only(models, by_model))
    shape["head_dim"] = np.where(
        shape["head_dim"] > 0, shape["head_dim"], shape["hidden"] // np.maximum(shape["heads"], 1)
    )
    shape["tied_embeddings"] = by_model(
        {k: m.tied_embeddings for k, m in models.items()}, False
    ).astype(bool)
    ok = ~problems.bad
    problems.add_where(
        ok & (shape["hidden"] % shape["heads"] != 0), "hidden",
        lambda r: f"hidden {shape['hidden'][r]} is not divisible by heads {shape['heads'][r]}",
    )  # fmt: skip
    problems.add_where(
        ok & (shape["heads"] % shape["kv_heads"] != 0), "kv_heads",
        lambda r: f"heads {shape['heads'][r]} is not divisible by kv_heads "
        f"{shape['kv_heads'][r]}",
    )  # fmt: skip
    return shape
