"""Transformer shapes and parameter counts (``data/models.yaml``).

Parameter counts are derived from the shape, never stored. Conventions (per transformer block):

- attention: Q and O are ``hidden x hidden``; K and V are ``hidden x (kv_heads * head_dim)``;
- MLP: ``swiglu`` has three ``hidden x ffn`` matrices (gate, up, down), ``gelu`` two;
- two norms of ``hidden`` weights each; biases are ignored (Llama has none, MPT has none);
- embeddings: ``vocab x hidden`` once when tied to the LM head, twice when not.

All functions take scalars or numpy arrays (one element per configuration) and broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file

__all__ = [
    "ModelShape",
    "attention_params_per_layer",
    "embedding_params",
    "layer_params",
    "load_models",
    "matmul_params",
    "mlp_params_per_layer",
    "total_params",
]

_MODEL_KEYS = (
    "description", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp",
    "tied_embeddings", "sources",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelShape:
    """A transformer's shape (Calculon's "application")."""

    key: str
    description: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    """Key/value heads; equal to ``heads`` for multi-head attention."""
    ffn: int
    """MLP inner size."""
    vocab: int
    mlp: str
    """``swiglu`` or ``gelu``."""
    tied_embeddings: bool
    sources: tuple[str, ...]
    label: str
    """Name in figures, tables and notes (``Llama-2 7B``); the key where the catalogue gives
    none."""
    color_slot: int | None
    """Fixed position in the figures' palette; None: a free one."""
    aliases: tuple[str, ...]
    """Names a published source uses for this model, matched exactly."""

    @property
    def params(self) -> float:
        """Total parameters."""
        return float(
            total_params(
                self.layers, self.hidden, self.heads, self.kv_heads, self.ffn, self.vocab,
                self.mlp == "swiglu", self.tied_embeddings,
            )
        )  # fmt: skip


def attention_params_per_layer(
    hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike
) -> np.ndarray:
    """Weights of Q, K, V and O projections of one block."""
    kv_dim = kv_heads * (hidden // heads)
    return 2 * hidden * hidden + 2 * hidden * kv_dim


def mlp_params_per_layer(hidden: ArrayLike, ffn: ArrayLike, swiglu: ArrayLike) -> np.ndarray:
    """Weights of one block's MLP: 3·h·ffn for SwiGLU, 2·h·ffn for GELU."""
    return np.where(swiglu, 3, 2) * hidden * ffn


def layer_params(
    hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike, ffn: ArrayLike, swiglu: ArrayLike
) -> np.ndarray:
    """Parameters of one transformer block (matrices plus two norms)."""
    return (
        attention_params_per_layer(hidden, heads, kv_heads)
        + mlp_params_per_layer(hidden, ffn, swiglu)
        + 2 * hidden
    )


def embedding_params(hidden: ArrayLike, vocab: ArrayLike, tied: ArrayLike) -> np.ndarray:
    """Input embedding plus LM head: vocab·h if tied, 2·vocab·h if not."""
    return np.where(tied, 1, 2) * vocab * hidden


def matmul_params(
    layers: ArrayLike,
    hidden: ArrayLike,
    heads: ArrayLike,
    kv_heads: ArrayLike,
    ffn: ArrayLike,
    vocab: ArrayLike,
    swiglu: ArrayLike,
) -> np.ndarray:
    """Parameters that take part in a matrix multiply per token: all block matrices plus the LM
    head (vocab·h); the input embedding is a lookup and costs no FLOPs."""
    per_layer = attention_params_per_layer(hidden, heads, kv_heads) + mlp_params_per_layer(
        hidden, ffn, swiglu
    )
    return layers * per_layer + vocab * hidden


def total_params(
    layers: ArrayLike,
    hidden: ArrayLike,
    heads: ArrayLike,
    kv_heads: ArrayLike,
    ffn: ArrayLike,
    vocab: ArrayLike,
    swiglu: ArrayLike,
    tied: ArrayLike,
) -> np.ndarray:
    """All parameters (blocks, final norm, embeddings)."""
    return (
        layers * layer_params(hidden, heads, kv_heads, ffn, swiglu)
        + hidden
        + embedding_params(hidden, vocab, tied)
    )


def _positive_int(path: Path, where: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputFileError(path, f"{where}: expected a positive integer, got {value!r}")
    return value


def _parse(path: Path, key: str, entry: dict) -> ModelShape:
    where = f"models.{key}"
    require_keys(path, where, entry, _MODEL_KEYS)
    ints = {
        name: _positive_int(path, f"{where}.{name}", entry[name])
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
    }
    if ints["hidden"] % ints["heads"]:
        raise InputFileError(path, f"{where}: hidden {ints['hidden']} is not divisible by heads")
    if ints["heads"] % ints["kv_heads"]:
        raise InputFileError(path, f"{where}: heads {ints['heads']} not divisible by kv_heads")
    if entry["mlp"] not in ("swiglu", "gelu"):
        raise InputFileError(path, f"{where}.mlp: {entry['mlp']!r} is not swiglu or gelu")
    return ModelShape(
        key=key,
        description=" ".join(str(entry["description"]).split()),
        mlp=str(entry["mlp"]),
        tied_embeddings=bool(entry["tied_embeddings"]),
        sources=tuple(entry["sources"]),
        label=str(entry.get("label", key)),
        color_slot=entry.get("color_slot"),
        aliases=tuple(str(alias) for alias in entry.get("aliases", ())),
        **ints,
    )


@cache
def _load(path: Path) -> dict[str, ModelShape]:
    data = load_yaml(path)
    check_document(data, path, schema_file("models"))
    require_keys(path, "top level", data, ("models",))
    return {key: _parse(path, key, entry) for key, entry in data["models"].items()}


def load_models(path: str | Path | None = None) -> dict[str, ModelShape]:
    """Load (and cache) the model catalogue ``path`` (default: the shipped ``data/models.yaml``),
    checked against ``workflow/schemas/models.schema.yaml``."""
    return _load(Path(path) if path is not None else data_dir() / "models.yaml")
