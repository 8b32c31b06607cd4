"""The model catalogue (``data/models.yaml``): each model's transformer shape.

Parameter counts are derived from the shape, never stored (:mod:`trainscale.sim.model.params`,
where the counting conventions are).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file
from trainscale.sim.model.params import TransformerShape, total_params

__all__ = ["ModelShape", "load_models"]

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
    def transformer(self) -> TransformerShape:
        """The shape the parameter and FLOP counts take."""
        return TransformerShape(
            self.layers, self.hidden, self.heads, self.kv_heads, self.ffn, self.vocab,
            self.mlp == "swiglu",
        )  # fmt: skip

    @property
    def params(self) -> float:
        """Total parameters."""
        return float(total_params(self.transformer, self.tied_embeddings))


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
