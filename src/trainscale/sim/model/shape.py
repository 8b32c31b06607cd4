"""The model catalogue (``data/models.yaml``): each model's transformer shape.

Parameter counts are derived from the shape, never stored (:mod:`trainscale.sim.model.params`
and :mod:`trainscale.sim.model.counts`, where the counting conventions are). Besides the dense
keys, an entry may give ``head_dim`` (grouped-query attention whose heads are not
``hidden / heads`` wide), ``mla`` (multi-head latent attention,
:class:`~trainscale.sim.model.attention.MLAShape`) and ``moe`` (a mixture-of-experts MLP,
:class:`~trainscale.sim.model.moe.MoEShape`); any other key is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file
from trainscale.sim.model.attention import MLAShape
from trainscale.sim.model.counts import active_params, total_params_of
from trainscale.sim.model.moe import MoEShape
from trainscale.sim.model.params import TransformerShape, total_params

__all__ = ["ModelShape", "load_models"]

_MODEL_KEYS = (
    "description", "layers", "hidden", "heads", "kv_heads", "vocab", "mlp", "tied_embeddings",
    "sources",
)  # fmt: skip
_MLA_KEYS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_MOE_KEYS = ("num_experts", "experts_per_token", "expert_ffn")


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
    """Dense MLP inner size (every block of a dense model, the leading dense blocks of an MoE
    one); 0 for an MoE model without dense blocks."""
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
    head_dim: int
    """Width of one attention head (``hidden / heads`` unless the catalogue gives another)."""
    mla: MLAShape | None = None
    """Multi-head latent attention's dimensions; None: grouped-query attention."""
    moe: MoEShape | None = None
    """The mixture-of-experts MLP; None: a dense model."""

    @property
    def plain(self) -> bool:
        """A dense model with grouped-query attention of ``hidden / heads``-wide heads: what
        :attr:`transformer` and the simulator's step-time model describe."""
        return self.moe is None and self.mla is None and self.head_dim * self.heads == self.hidden

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
        if self.plain:
            return float(total_params(self.transformer, self.tied_embeddings))
        return float(total_params_of(self))

    @property
    def active_params(self) -> float:
        """Parameters one token passes through (:mod:`trainscale.sim.model.counts`); the total
        for a dense model."""
        return self.params if self.moe is None else float(active_params(self))


def _positive_int(path: Path, where: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputFileError(path, f"{where}: expected a positive integer, got {value!r}")
    return value


def _count(path: Path, where: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputFileError(path, f"{where}: expected a whole number >= 0, got {value!r}")
    return value


def _mla(path: Path, where: str, entry: dict | None) -> MLAShape | None:
    if entry is None:
        return None
    require_keys(path, where, entry, _MLA_KEYS)
    q_lora = entry.get("q_lora_rank")
    return MLAShape(
        q_lora_rank=None if q_lora is None else _positive_int(path, f"{where}.q_lora_rank", q_lora),
        **{name: _positive_int(path, f"{where}.{name}", entry[name]) for name in _MLA_KEYS},
    )


def _moe(path: Path, where: str, entry: dict | None, layers: int) -> MoEShape | None:
    """The ``moe`` mapping: the routed experts (required), shared experts and leading dense
    blocks (default none)."""
    if entry is None:
        return None
    require_keys(path, where, entry, _MOE_KEYS)
    ints = {name: _positive_int(path, f"{where}.{name}", entry[name]) for name in _MOE_KEYS}
    shared = _count(path, f"{where}.shared_experts", entry.get("shared_experts", 0))
    dense = _count(path, f"{where}.dense_layers", entry.get("dense_layers", 0))
    shared_ffn = _positive_int(
        path, f"{where}.shared_expert_ffn", entry.get("shared_expert_ffn", ints["expert_ffn"])
    )
    if ints["experts_per_token"] > ints["num_experts"]:
        raise InputFileError(
            path,
            f"{where}.experts_per_token: {ints['experts_per_token']} is more than num_experts "
            f"{ints['num_experts']} (a token goes to at most every expert)",
        )
    if dense >= layers:
        raise InputFileError(
            path, f"{where}.dense_layers: {dense} leaves no MoE block of {layers} layers"
        )
    return MoEShape(shared_experts=shared, shared_expert_ffn=shared_ffn, dense_layers=dense, **ints)


def _ffn(path: Path, where: str, entry: dict, moe: MoEShape | None) -> int:
    """The dense MLP width: required unless every block is an MoE block (then absent, 0)."""
    if moe is not None and moe.dense_layers == 0:
        if "ffn" in entry:
            raise InputFileError(
                path,
                f"{where}.ffn: every block is an MoE block (moe.dense_layers 0), so a dense ffn "
                "would be unused; remove it (the experts' width is moe.expert_ffn)",
            )
        return 0
    require_keys(path, where, entry, ("ffn",))
    return _positive_int(path, f"{where}.ffn", entry["ffn"])


def _parse(path: Path, key: str, entry: dict) -> ModelShape:
    where = f"models.{key}"
    require_keys(path, where, entry, _MODEL_KEYS)
    ints = {
        name: _positive_int(path, f"{where}.{name}", entry[name])
        for name in ("layers", "hidden", "heads", "kv_heads", "vocab")
    }
    mla = _mla(path, f"{where}.mla", entry.get("mla"))
    moe = _moe(path, f"{where}.moe", entry.get("moe"), ints["layers"])
    if "head_dim" in entry:
        head_dim = _positive_int(path, f"{where}.head_dim", entry["head_dim"])
    elif ints["hidden"] % ints["heads"] and mla is None:
        raise InputFileError(
            path,
            f"{where}: hidden {ints['hidden']} is not divisible by heads; give head_dim where "
            "the heads are not hidden / heads wide",
        )
    else:
        head_dim = ints["hidden"] // ints["heads"]
    if (mla is not None or moe is not None) and entry["mlp"] != "swiglu":
        raise InputFileError(path, f"{where}.mlp: MLA and MoE models are modelled as swiglu")
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
        head_dim=head_dim,
        mla=mla,
        moe=moe,
        ffn=_ffn(path, where, entry, moe),
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
