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
from trainscale.sim.model.shape import ModelShape

__all__ = ["check_columns", "refuse_unmodelled", "resolve_shape"]


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


def _unmodelled(models: Mapping[str, ModelShape], by_model) -> np.ndarray:
    """Per row, why the step-time model does not describe its catalogue model (mixture of
    experts, multi-head latent attention, heads not ``hidden / heads`` wide), or ""."""
    reasons = {
        key: (
            f"{key} is a mixture-of-experts model ({m.moe.num_experts} experts, top-"
            f"{m.moe.experts_per_token})" if m.moe is not None
            else f"{key} uses multi-head latent attention" if m.mla is not None
            else f"{key} has attention heads of {m.head_dim}, not hidden / heads"
        )
        for key, m in models.items()
        if not m.plain
    }  # fmt: skip
    return by_model(reasons, "").astype(object)


def _experts(models: Mapping[str, ModelShape], by_model) -> dict[str, np.ndarray]:
    """The routed experts and their width of each row's catalogue model (0: dense), what the
    plan's expert rules read."""
    return {
        name: by_model(
            {k: getattr(m.moe, name) if m.moe is not None else 0 for k, m in models.items()}, 0
        ).astype(np.int64)
        for name in ("num_experts", "expert_ffn")
    }


def refuse_unmodelled(v: dict[str, np.ndarray], problems: Problems) -> None:
    """A problem for each row whose model the step-time model does not describe (checked last,
    so that the row's plan is checked too): never a silent dense model."""
    reason = v["unmodelled"]
    problems.add_where(
        reason != "", "model",
        lambda r: f"{reason[r]}: the step-time simulator predicts dense transformers with "
        "hidden / heads-wide heads only; its parameters are listed by 'trainscale list models'",
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
    unmodelled = _unmodelled(models, by_model)
    unsupported = named & known & (unmodelled != "")
    shape: dict[str, np.ndarray] = {}
    for name in INT_SHAPE:
        base = by_model({k: float(getattr(m, name)) for k, m in models.items()}, np.nan).astype(
            np.float64
        )
        explicit = _numeric(frame, name)
        given = ~missing_mask(frame, name)
        values = np.where(given, explicit, base)
        fine = _within(values, NUMERIC_BOUNDS[name])
        bad = ~fine & ~(named & ~known) & ~unsupported
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
    shape.update(_experts(models, by_model))
    shape["unmodelled"] = np.where(unsupported, unmodelled, "")
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
