"""Validate a configuration table and turn it into arrays (one element per configuration).

This is the one place where a plan is checked (Calculon's ``Llm`` constructor, torchtitan's
``ParallelDims._validate``): every problem is collected with its row and column and what is
allowed, then raised together as one :class:`~trainscale.errors.ConfigurationError`, or — with
``skip_invalid`` — returned as a rejects table.

Rules (each message names the factors involved):

- the model comes from ``model`` (catalogue key) or from all of the shape columns; explicit shape
  columns override the catalogue; ``hidden`` divisible by ``heads``, ``heads`` by ``kv_heads``;
- positive integers for shape, batch, GPU count and degrees, each within its plausible range
  (:data:`trainscale.schema.NUMERIC_BOUNDS`, so that no product of them overflows int64); the
  optional ``gpus_per_node``, ``nic_gbit_per_s_per_gpu`` and ``power_limit_w`` within theirs
  (0 or empty: the default); text that is not a plain number (``1,024``, ``0,5``, ``−2``,
  ``400 Gb/s``) is named as such (:func:`trainscale.io.numbers.number_problem`); known ``gpu``;
- ``tp`` divides ``heads`` and ``kv_heads`` divides by ``tp`` or ``tp`` by ``kv_heads``
  (KV heads are replicated when ``tp`` > ``kv_heads``, as in Megatron-LM);
- ``num_gpus`` divisible by ``tp·pp·cp``; ``global_batch`` divisible by ``dp·micro_batch``;
- ``seq_len`` divisible by ``2·cp`` (causal load balancing splits the sequence in 2·cp chunks);
- ``vpp`` > 1 needs ``pp`` > 1 and ``grad_accum`` divisible by ``pp`` (interleaved 1F1B);
- ``layers`` ≥ ``pp·vpp`` (a stage that is not a multiple gets ``ceil(layers / (pp·vpp))`` layers
  per chunk: the slowest stage sets the pace);
- ``fp8`` only on GPUs with FP8 tensor cores; ``hsdp`` needs ``dp`` > 1;
- ``system`` (optional) is a catalogue system holding the row's GPU;
- ``framework`` is a profile of ``data/frameworks.yaml``; its behaviours come from the profile
  unless an override column (``overlap_grad_reduce``, ``overlap_param_gather``,
  ``tp_comm_overlap``, ``fused_kernels``, ``repeat_kv``, ``shard_granularity``,
  ``attention_kernel``, ``fp8_recipe``, ``cp_comm_type``) sets them;
  an override that contradicts the plan (a granularity for unsharded parameters, an FP8 recipe in
  bf16, a parameter gather under DDP, TP overlap without TP) is an error, and so is a plan the
  stack refuses (its profile's ``pipeline_shardings`` and ``pipeline_schedules``: DeepSpeed with
  ZeRO-2/3 and ``pp`` > 1, or with ``vpp`` > 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.io.suggest import did_you_mean
from trainscale.schema import (
    ATTENTION_KERNELS,
    CP_COMM_TYPES,
    FP8_RECIPES,
    FRAMEWORKS,
    MODEL_SHAPE_COLUMNS,
    NUMERIC_BOUNDS,
    PRECISIONS,
    RECOMPUTE_MODES,
    REJECT_COLUMNS,
    SHARD_GRANULARITIES,
    SHARDINGS,
    Sharding,
    names,
)
from trainscale.sim.cells import fmt as _fmt
from trainscale.sim.cells import numeric as _numeric
from trainscale.sim.cells import raw as _raw
from trainscale.sim.cells import value_problem as _value_problem
from trainscale.sim.cells import within as _within
from trainscale.sim.degrees import data_parallel_degree, model_parallel_degree
from trainscale.sim.frameworks import (
    BOOLEAN_BEHAVIOURS,
    DEFAULT_FRAMEWORK,
    TRITON_ATTENTION_RELATIVE_SPEED,
    FrameworkProfile,
    fp8_cast_bytes_per_element,
)
from trainscale.sim.model.shape import ModelShape
from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["Configs", "build_configs"]

_SHAPE_NAMES = tuple(c.name for c in MODEL_SHAPE_COLUMNS)
_INT_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
_REQUIRED = (
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp", "pp", "sharding",
    "recompute", "precision",
)  # fmt: skip
_SHAPE_GROUP = {"model", "mlp", *_INT_SHAPE}
_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


@dataclass(slots=True, kw_only=True)
class Configs:
    """Validated configurations as arrays; every field has one element per configuration.

    Shapes are ``(n,)``. Sizes in bytes, bandwidths in bytes/s, FLOP rates in FLOP/s, power in W.
    """

    # model
    layers: np.ndarray
    hidden: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    ffn: np.ndarray
    vocab: np.ndarray
    swiglu: np.ndarray
    tied_embeddings: np.ndarray
    # batch
    seq_len: np.ndarray
    global_batch: np.ndarray
    micro_batch: np.ndarray
    # plan
    num_gpus: np.ndarray
    gpus_per_node: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    vpp: np.ndarray
    dp: np.ndarray
    grad_accum: np.ndarray
    sharding: np.ndarray
    """Index into :data:`~trainscale.schema.SHARDINGS`."""
    recompute: np.ndarray
    """Index into :data:`~trainscale.schema.RECOMPUTE_MODES`."""
    fp8: np.ndarray
    sequence_parallel: np.ndarray
    # framework (the software stack's behaviours, data/frameworks.yaml)
    framework: np.ndarray
    """Index into :data:`~trainscale.schema.FRAMEWORKS`."""
    overlap_grad_reduce: np.ndarray
    overlap_param_gather: np.ndarray
    tp_comm_overlap: np.ndarray
    fused_kernels: np.ndarray
    """Normalisation, rotary and activation kernels fused (fewer HBM passes)."""
    attention_kernel: np.ndarray
    """Index into :data:`~trainscale.schema.ATTENTION_KERNELS`."""
    fused_attention: np.ndarray
    """The fused attention kernel (cuDNN / FlashAttention-3) rather than FlashAttention-2."""
    per_tensor_gather: np.ndarray
    """Sharded all-gathers are issued per parameter tensor (DeepSpeed ZeRO-3), not per layer."""
    fp8_recipe: np.ndarray
    """Index into :data:`~trainscale.schema.FP8_RECIPES`."""
    repeat_kv: np.ndarray
    """K/V repeated to the query heads before the attention kernel (context parallelism moves
    ``heads`` heads of K/V, not ``kv_heads``)."""
    cp_comm_type: np.ndarray
    """Index into :data:`~trainscale.schema.CP_COMM_TYPES`."""
    deferred_grad_sync: np.ndarray
    """Sharded data parallelism (ZeRO-2, FSDP, HSDP) under pipeline parallelism whose profile
    defers its gradient sync and resharding to the last micro-batch (``pipeline_defers_grad_sync``,
    PyTorch's pipeline stages)."""
    fp8_cast_bytes: np.ndarray
    """HBM bytes per FP8 GEMM input element spent on quantisation (the FP8 recipe)."""
    ddp_bucket_params: np.ndarray
    """Gradient bucket of overlapped data-parallel reduction, parameters."""
    host_overhead_s: np.ndarray
    """CPU time to launch one block's kernels (forward + backward, one micro-batch), s."""
    # system
    gpu_index: np.ndarray
    """Index into the sorted GPU keys of the hardware catalogue."""
    system: np.ndarray
    """System catalogue key (object array)."""
    peak_flops_per_s: np.ndarray
    """Dense peak of the configured precision (what the linear layers run at)."""
    bf16_flops_per_s: np.ndarray
    """Dense BF16 peak: attention and everything outside the linear layers run at it."""
    gemm_efficiency_max: np.ndarray
    """Catalogued large-GEMM fraction of the configured precision's peak (MAMF / peak)."""
    bf16_gemm_efficiency_max: np.ndarray
    """The same for BF16 GEMMs."""
    gemm_half_efficiency_dim: np.ndarray
    attention_efficiency_max: np.ndarray
    flash_attention: np.ndarray
    hbm_bytes: np.ndarray
    hbm_bytes_per_s: np.ndarray
    nvlink_bytes_per_s: np.ndarray
    nvls: np.ndarray
    nic_bytes_per_s: np.ndarray
    """Scale-out NIC line rate per GPU."""
    fabric_factor: np.ndarray
    tdp_w: np.ndarray
    idle_w: np.ndarray
    power_limit_w: np.ndarray
    """Board power limit, W: the TDP unless the configuration sets a lower one."""

    def __len__(self) -> int:
        return len(self.layers)

    def take(self, index: np.ndarray) -> Configs:
        """Return the configurations selected by an index or boolean mask."""
        return Configs(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def _coded_text(
    frame: pd.DataFrame, name: str, *, lower: bool = False
) -> tuple[np.ndarray, list[str]]:
    """Column as codes into its stripped (and maybe lower-cased) distinct values, with one
    factorisation: ``(codes, values)``, where a missing cell has the code ``len(values) - 1``,
    whose value is ""."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=np.intp), [""]
    codes, uniques = pd.factorize(frame[name], use_na_sentinel=True)
    cleaned = [str(u).strip().lower() if lower else str(u).strip() for u in uniques]
    return np.where(codes < 0, len(cleaned), codes), [*cleaned, ""]


def _text(frame: pd.DataFrame, name: str, *, lower: bool = False) -> np.ndarray:
    """Column as stripped strings; "" where missing. Works on the unique values only."""
    codes, values = _coded_text(frame, name, lower=lower)
    return np.array(values, dtype=object)[codes]


def _text_lookup(
    frame: pd.DataFrame, name: str, mapping: dict, default: int, *, lower: bool = False
) -> np.ndarray:
    """``mapping.get(text, default)`` for the column's stripped text, per row (int64)."""
    codes, values = _coded_text(frame, name, lower=lower)
    return np.array([mapping.get(v, default) for v in values], dtype=np.int64)[codes]


def _per_row(codes: np.ndarray, values: list, test) -> np.ndarray:
    """``test(value)`` for each row's value, evaluated once per distinct value: ``codes`` and
    ``values`` as :func:`_coded_text` returns them (bool, shape ``(n,)``)."""
    return np.array([bool(test(v)) for v in values], dtype=bool)[codes]


class _Problems:
    """Collects ``(row, column, message)`` problems; rows are positions in the input."""

    def __init__(self, n: int) -> None:
        self.items: list[tuple[int, str, str]] = []
        self.bad = np.zeros(n, dtype=bool)
        self.bad_by_column: dict[str, np.ndarray] = {}

    def add_where(self, mask: np.ndarray, column: str, message) -> None:
        """Record a problem for every row in ``mask``; ``message(row)`` builds the text."""
        for row in np.flatnonzero(mask):
            self.items.append((int(row), column, message(int(row))))
        self.bad |= mask
        group = "shape" if column in _SHAPE_GROUP else column
        self.bad_by_column[group] = self.bad_by_column.get(group, False) | mask

    def ok_for(self, *columns: str) -> np.ndarray:
        """Rows whose given columns (and model shape) are valid so far: an interlock between
        valid columns is reported even when another column of the row is invalid."""
        bad = np.zeros_like(self.bad)
        for column in (*columns, "shape"):
            bad = bad | self.bad_by_column.get(column, False)
        return ~bad

    def sorted_items(self) -> list[tuple[int, str, str]]:
        return sorted(self.items, key=lambda item: item[0])


def _check_columns(frame: pd.DataFrame) -> None:
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


def _resolve_shape(
    frame: pd.DataFrame, models: Mapping[str, ModelShape], problems: _Problems
) -> dict[str, np.ndarray]:
    """Shape columns from the catalogue, overridden by explicit columns."""
    codes, uniques = _coded_text(frame, "model")

    def by_model(mapping: dict, default: object) -> np.ndarray:
        """``mapping.get(model, default)`` per row, from one factorisation of the model column
        (numbers and flags come back typed, text as objects)."""
        values = [mapping.get(u, default) for u in uniques]
        typed = not any(isinstance(v, str) for v in values)
        return np.array(values, dtype=None if typed else object)[codes]

    named = _per_row(codes, uniques, lambda u: u != "")
    known = by_model({k: True for k in models}, False).astype(bool)
    valid_names = ", ".join(sorted(models))
    problems.add_where(
        named & ~known, "model",
        lambda r: f"unknown model {uniques[codes[r]]!r}{did_you_mean(uniques[codes[r]], models)}"
        f"; valid: {valid_names}",
    )  # fmt: skip
    shape: dict[str, np.ndarray] = {}
    for name in _INT_SHAPE:
        base = by_model({k: float(getattr(m, name)) for k, m in models.items()}, np.nan).astype(
            np.float64
        )
        explicit = _numeric(frame, name)
        given = ~_is_missing_mask(frame, name)
        values = np.where(given, explicit, base)
        fine = _within(values, NUMERIC_BOUNDS[name])
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
    mlp_codes, mlp_values = _coded_text(frame, "mlp", lower=True)
    base_mlp = [models[u].mlp if u in models else "" for u in uniques]
    given_mlp = _per_row(mlp_codes, mlp_values, lambda v: v != "")

    def mlp_is(allowed: tuple[str, ...]) -> np.ndarray:
        return np.where(
            given_mlp,
            _per_row(mlp_codes, mlp_values, lambda v: v in allowed),
            _per_row(codes, base_mlp, lambda v: v in allowed),
        )

    bad_mlp = ~mlp_is(("swiglu", "gelu")) & ~(named & ~known)
    problems.add_where(
        bad_mlp, "mlp",
        lambda r: f"{mlp_values[mlp_codes[r]] or base_mlp[codes[r]] or 'missing'!r} is not "
        "allowed; allowed: swiglu, gelu",
    )  # fmt: skip
    shape["swiglu"] = mlp_is(("swiglu",))
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


def _is_missing_mask(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.ones(len(frame), dtype=bool)
    column = frame[name]
    missing = column.isna().to_numpy(dtype=bool, copy=True)
    if column.dtype == object or pd.api.types.is_string_dtype(column):
        codes, values = _coded_text(frame, name)
        missing |= _per_row(codes, values, lambda v: v == "")
    return missing


def _positive_ints(
    frame: pd.DataFrame, names: tuple[str, ...], problems: _Problems, default: int | None = None
) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        values = _numeric(frame, name)
        missing = _is_missing_mask(frame, name)
        if default is not None:
            values = np.where(missing, float(default), values)
        bad = ~_within(values, NUMERIC_BOUNDS[name])
        note = f" (empty: {default})" if default is not None else ""
        problems.add_where(
            bad, name,
            lambda r, name=name, note=note, values=values: (
                _value_problem(frame, name, r, values[r], note)
            ),
        )  # fmt: skip
        out[name] = np.where(bad, 1, values).astype(np.int64)
    return out


def _choices(
    frame: pd.DataFrame, name: str, allowed: tuple[str, ...], problems: _Problems
) -> np.ndarray:
    index = _text_lookup(frame, name, {t: i for i, t in enumerate(allowed)}, -1, lower=True)
    text = _text(frame, name) if (index < 0).any() else None
    problems.add_where(
        index < 0, name,
        lambda r: ("missing" if text[r] == "" else f"{_raw(frame, name, r)!r} is not allowed")
        + f"; allowed: {', '.join(allowed)}",
    )  # fmt: skip
    return np.where(index < 0, 0, index)


def _optional_positive(frame: pd.DataFrame, name: str, problems: _Problems) -> np.ndarray:
    """Optional number within :data:`~trainscale.schema.NUMERIC_BOUNDS`; 0 or empty means "use
    the default system"; NaN where absent, default or invalid."""
    values = _numeric(frame, name)
    missing = _is_missing_mask(frame, name) | (values == 0)
    bad = ~missing & ~_within(values, NUMERIC_BOUNDS[name])
    problems.add_where(
        bad, name,
        lambda r: _value_problem(frame, name, r, values[r], ", or 0 or empty for the GPU's "
                                 "default system"),
    )  # fmt: skip
    return np.where(missing | bad, np.nan, values)


def _power_limit(
    frame: pd.DataFrame, gpu: dict[str, np.ndarray], problems: _Problems
) -> np.ndarray:
    """Optional ``power_limit_w``: above the GPU's idle power and at most its TDP; NaN where
    absent (0 or empty: the TDP, no limit)."""
    name = "power_limit_w"
    values = _numeric(frame, name)
    missing = _is_missing_mask(frame, name) | (values == 0)
    outside = ~missing & ~_within(values, NUMERIC_BOUNDS[name])
    problems.add_where(
        outside, name,
        lambda r: _value_problem(frame, name, r, values[r], " and for this GPU above its idle "
                                 "power, at most its TDP; 0 or empty for no limit"),
    )  # fmt: skip
    given = ~missing & ~outside
    bad = ~missing & ~(given & (values > gpu["idle_w"]) & (values <= gpu["tdp_w"]))
    problems.add_where(
        bad & ~outside & ~problems.bad_by_column.get("gpu", np.zeros(len(frame), dtype=bool)),
        name,
        lambda r: f"{_fmt(_raw(frame, name, r))} W is not allowed for this GPU: a power limit "
        f"must lie above its idle power ({gpu['idle_w'][r]:g} W) and at most its TDP "
        f"({gpu['tdp_w'][r]:g} W); leave empty for no limit",
    )  # fmt: skip
    return np.where(missing | bad, np.nan, values)


def _as_number(text: str) -> float:
    """``text`` as a number, NaN where it is none (as ``pd.to_numeric(errors="coerce")``)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def _optional_bool(
    frame: pd.DataFrame, name: str, problems: _Problems, default: np.ndarray, default_text: str
) -> tuple[np.ndarray, np.ndarray]:
    """Optional boolean column; returns (values with ``default`` where empty, given mask)."""
    if name not in frame.columns:
        return default, np.zeros(len(frame), dtype=bool)
    column = frame[name]
    if column.dtype == bool:
        return column.to_numpy(dtype=bool), np.ones(len(frame), dtype=bool)
    # Decided on the distinct values: empty, a word of _TRUE or _FALSE, or the number 1 or 0.
    codes, values = _coded_text(frame, name, lower=True)
    missing = _per_row(codes, values, lambda v: v == "")
    true = _per_row(codes, values, lambda v: v in _TRUE or _as_number(v) == 1)
    false = _per_row(codes, values, lambda v: v in _FALSE or _as_number(v) == 0)
    bad = ~missing & ~true & ~false
    problems.add_where(
        bad, name,
        lambda r: f"{_raw(frame, name, r)!r} is not allowed; allowed: true, false "
        f"(default: {default_text})",
    )  # fmt: skip
    given = ~missing & ~bad
    return np.where(given, true, default), given


def _sequence_parallel(frame: pd.DataFrame, tp: np.ndarray, problems: _Problems) -> np.ndarray:
    values, _ = _optional_bool(frame, "sequence_parallel", problems, tp > 1, "true when tp > 1")
    return values


def _optional_choice(
    frame: pd.DataFrame, name: str, allowed: tuple[str, ...], problems: _Problems
) -> np.ndarray:
    """Optional categorical column: index into ``allowed``, -1 where empty or invalid."""
    if name not in frame.columns:
        return np.full(len(frame), -1, dtype=np.int64)
    codes, values = _coded_text(frame, name, lower=True)
    index = np.array([allowed.index(v) if v in allowed else -1 for v in values])[codes]
    empty = _per_row(codes, values, lambda v: v == "")
    problems.add_where(
        ~empty & (index < 0), name,
        lambda r: f"{_raw(frame, name, r)!r} is not allowed; allowed: {', '.join(allowed)} "
        "(or empty for the framework profile's)",
    )  # fmt: skip
    return index


def _framework_behaviours(
    frame: pd.DataFrame,
    v: dict[str, np.ndarray],
    profiles: Mapping[str, FrameworkProfile],
    problems: _Problems,
) -> dict[str, np.ndarray]:
    """The software stack of every row: its profile's behaviours, then the row's overrides."""
    keys = {"": FRAMEWORKS.index(DEFAULT_FRAMEWORK)} | {k: i for i, k in enumerate(FRAMEWORKS)}
    framework = _text_lookup(frame, "framework", keys, -1, lower=True)
    runs = {a.lower(): k for k, p in profiles.items() for a in p.aliases}

    def unknown(r: int) -> str:
        name = _raw(frame, "framework", r)
        profile = runs.get(str(name).strip().lower())
        hint = "" if profile else did_you_mean(name, FRAMEWORKS)
        text = f"unknown framework {name!r}{hint}; valid: {', '.join(FRAMEWORKS)} "
        return (
            text
            + "(data/frameworks.yaml)"
            + (f"; {name} runs on the {profile!r} profile" if profile else "")
        )

    problems.add_where(framework < 0, "framework", unknown)
    framework = np.where(framework < 0, FRAMEWORKS.index(DEFAULT_FRAMEWORK), framework)
    ordered = [profiles[k] for k in FRAMEWORKS]
    sharding = v["sharding"]
    out: dict[str, np.ndarray] = {"framework": framework}
    given: dict[str, np.ndarray] = {}
    for behaviour in BOOLEAN_BEHAVIOURS:
        table = np.array([[getattr(p, behaviour)[s] for s in SHARDINGS] for p in ordered])
        default = table[framework, sharding]
        out[behaviour], given[behaviour] = _optional_bool(
            frame, behaviour, problems, default, "the framework profile's"
        )
    granularity = _optional_choice(frame, "shard_granularity", SHARD_GRANULARITIES, problems)
    profile_granularity = np.array(
        [SHARD_GRANULARITIES.index(p.shard_granularity) for p in ordered]
    )[framework]
    out["per_tensor_gather"] = np.where(granularity >= 0, granularity, profile_granularity) == 1
    kernel = _optional_choice(frame, "attention_kernel", ATTENTION_KERNELS, problems)
    profile_kernel = np.array([ATTENTION_KERNELS.index(p.attention_kernel) for p in ordered])
    out["attention_kernel"] = np.where(kernel >= 0, kernel, profile_kernel[framework])
    out["fused_attention"] = out["attention_kernel"] == ATTENTION_KERNELS.index("fused")
    recipe = recipe_given = _optional_choice(frame, "fp8_recipe", FP8_RECIPES, problems)
    profile_recipe = np.array([FP8_RECIPES.index(p.fp8_recipe) for p in ordered])[framework]
    recipe = np.where(recipe >= 0, recipe, profile_recipe)
    cast = np.array([fp8_cast_bytes_per_element(r) for r in FP8_RECIPES])
    out["fp8_cast_bytes"] = cast[recipe]
    out["fp8_recipe"] = recipe
    comm = _optional_choice(frame, "cp_comm_type", CP_COMM_TYPES, problems)
    profile_comm = np.array([CP_COMM_TYPES.index(p.cp_comm_type) for p in ordered])[framework]
    out["cp_comm_type"] = np.where(comm >= 0, comm, profile_comm)
    gathered = np.isin(sharding, (Sharding.ZERO2, Sharding.FSDP, Sharding.HSDP))
    defers = np.array([p.pipeline_defers_grad_sync for p in ordered])[framework]
    out["deferred_grad_sync"] = defers & gathered & (v["pp"] > 1)
    dp = np.maximum(data_parallel_degree(v["num_gpus"], v["tp"], v["pp"], v["cp"]), 1)
    bucket_min = np.array([p.ddp_bucket_params for p in ordered])[framework]
    bucket_per_dp = np.array([p.ddp_bucket_params_per_dp_rank for p in ordered])[framework]
    out["ddp_bucket_params"] = np.maximum(bucket_min, bucket_per_dp * dp)
    out["host_overhead_s"] = np.array([p.host_overhead_per_layer_s for p in ordered])[framework]

    # Overrides that contradict the rest of the row.
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    ok = problems.ok_for("sharding", "shard_granularity")
    problems.add_where(
        ok & (granularity >= 0) & ~sharded, "shard_granularity",
        lambda r: f"shard_granularity applies to sharded parameters (fsdp, hsdp); sharding is "
        f"{SHARDINGS[sharding[r]]}",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("precision", "fp8_recipe") & (recipe_given >= 0) & ~v["fp8"], "fp8_recipe",
        lambda r: "fp8_recipe needs precision fp8; precision is bf16",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("sharding", "overlap_param_gather")
        & given["overlap_param_gather"] & (sharding == Sharding.DDP), "overlap_param_gather",
        lambda r: "ddp gathers no parameters; overlap_param_gather applies to zero1, zero2, fsdp "
        "and hsdp",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("tp", "tp_comm_overlap")
        & given["tp_comm_overlap"] & out["tp_comm_overlap"] & (v["tp"] == 1), "tp_comm_overlap",
        lambda r: "tp_comm_overlap needs tp > 1",
    )  # fmt: skip
    # Plans the stack cannot run, from its profile (data/frameworks.yaml): shardings its pipeline
    # engine refuses with pp > 1 (DeepSpeed: ZeRO-2/3) and vpp > 1 without interleaved 1F1B.
    piped = np.array([[s in p.pipeline_shardings for s in SHARDINGS] for p in ordered])
    problems.add_where(
        problems.ok_for("framework", "sharding", "pp") & ~piped[framework, sharding]
        & (v["pp"] > 1), "sharding",
        lambda r: f"the {FRAMEWORKS[framework[r]]} profile runs pipeline parallelism (pp > 1) "
        f"only with {', '.join(ordered[framework[r]].pipeline_shardings)} (its "
        f"pipeline_shardings, data/frameworks.yaml); sharding is {SHARDINGS[sharding[r]]} with "
        f"pp {v['pp'][r]}: use one of those, or pp 1",
    )  # fmt: skip
    interleaves = np.array([p.interleaves for p in ordered])[framework]
    problems.add_where(
        problems.ok_for("framework", "vpp") & ~interleaves & (v["vpp"] > 1), "vpp",
        lambda r: f"the {FRAMEWORKS[framework[r]]} profile has no interleaved 1F1B (its "
        f"pipeline_schedules: {', '.join(ordered[framework[r]].pipeline_schedules)}, "
        f"data/frameworks.yaml); vpp is {v['vpp'][r]}: use vpp 1",
    )  # fmt: skip
    return out


def _gpu_hint(hardware: HardwareCatalog, name: object) -> str:
    """The "did you mean" of an unknown GPU name: the GPU whose catalogue ``aliases`` (the
    published wordings, ``H100``) match it, else the closest key by spelling."""
    match = hardware.gpu_for_text(str(name))
    return f" (did you mean {match!r}?)" if match else did_you_mean(name, hardware.gpus)


def _gpu_attributes(
    frame: pd.DataFrame, hardware: HardwareCatalog, problems: _Problems
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    gpu_keys = sorted(hardware.gpus)
    index = _text_lookup(frame, "gpu", {k: i for i, k in enumerate(gpu_keys)}, -1)
    gpu_codes, gpu_texts = _coded_text(frame, "gpu")
    problems.add_where(
        index < 0, "gpu",
        lambda r: (f"unknown GPU {_fmt(_raw(frame, 'gpu', r))}"
                   f"{_gpu_hint(hardware, _raw(frame, 'gpu', r))}" if gpu_texts[gpu_codes[r]]
                   else "missing") + f"; valid: {', '.join(gpu_keys)}",
    )  # fmt: skip
    unknown_gpu = index < 0
    index = np.where(unknown_gpu, 0, index)
    gpus = [hardware.gpus[k] for k in gpu_keys]

    # The system: named in the row, or the GPU's default; it must hold the row's GPU.
    system_keys = sorted(hardware.systems)
    position = {k: i for i, k in enumerate(system_keys)}
    default_index = np.array([position[hardware.system_for(k).key] for k in gpu_keys])[index]
    system_codes, system_names = _coded_text(frame, "system")
    named = _per_row(system_codes, system_names, lambda v: v != "")
    system_index = np.where(
        named,
        np.array([position.get(v, -1) for v in system_names], dtype=np.int64)[system_codes],
        default_index,
    )
    problems.add_where(
        system_index < 0, "system",
        lambda r: f"unknown system {system_names[system_codes[r]]!r}"
        f"{did_you_mean(system_names[system_codes[r]], system_keys)}; valid: "
        f"{', '.join(system_keys)}",
    )  # fmt: skip
    unknown_system = system_index < 0
    system_index = np.where(unknown_system, 0, system_index)
    system_gpu = [hardware.systems[k].gpu for k in system_keys]
    system_gpu_index = np.array([gpu_keys.index(g) if g in gpu_keys else -1 for g in system_gpu])
    gpu_names = np.array(gpu_keys, dtype=object)[index]
    problems.add_where(
        named & ~unknown_gpu & ~unknown_system & (system_gpu_index[system_index] != index),
        "system",
        lambda r: f"system {system_names[system_codes[r]]!r} holds "
        f"{system_gpu[system_index[r]]}, not {gpu_names[r]}",
    )  # fmt: skip
    systems = [hardware.systems[k] for k in system_keys]

    def table(values: list) -> np.ndarray:
        return np.array(values)[index]

    def by_system(values: list) -> np.ndarray:
        return np.array(values)[system_index]

    attributes = {
        "bf16": table([g.bf16_flops_per_s for g in gpus]),
        "fp8": table([g.fp8_flops_per_s or np.nan for g in gpus]),
        "eff_bf16": table([g.gemm_efficiency_max for g in gpus]),
        "eff_fp8": table([g.fp8_gemm_efficiency_max or g.gemm_efficiency_max for g in gpus]),
        "d0": table([g.gemm_half_efficiency_dim for g in gpus]),
        "attn": table([g.attention_efficiency_max for g in gpus]),
        "attn_fused": table([g.fused_attention_efficiency_max for g in gpus]),
        "flash": table([g.flash_attention for g in gpus]).astype(bool),
        "hbm_bytes": table([g.hbm_bytes for g in gpus]),
        "hbm_bytes_per_s": table([g.hbm_bytes_per_s for g in gpus]),
        "nvlink_bytes_per_s": table([g.nvlink_bytes_per_s for g in gpus]),
        "nvls": table([g.nvls for g in gpus]).astype(bool),
        "tdp_w": table([g.tdp_w for g in gpus]),
        "idle_w": table([g.idle_w for g in gpus]),
        "gpus_per_node": by_system([s.gpus_per_node for s in systems]),
        "nic_bytes_per_s": by_system([s.nic_bytes_per_s_per_gpu for s in systems]),
        "fabric_factor": by_system([hardware.fabric_efficiency_factor[s.fabric] for s in systems]),
        "system": np.array(system_keys, dtype=object)[system_index],
        "gpu_index": index,
    }
    return np.array(gpu_keys, dtype=object)[index], attributes


def _plan_rules(v: dict[str, np.ndarray], gpu_names: np.ndarray, problems: _Problems) -> None:
    """Interlocks between degrees, batch and hardware; only rows valid so far are checked."""
    tp, pp, cp, vpp = v["tp"], v["pp"], v["cp"], v["vpp"]
    heads, kv = v["heads"], v["kv_heads"]
    ok = problems.ok_for("tp")
    problems.add_where(
        ok & (heads % tp != 0), "tp", lambda r: f"tp {tp[r]} does not divide heads {heads[r]}"
    )
    problems.add_where(
        ok & (heads % tp == 0) & (kv % tp != 0) & (tp % kv != 0), "tp",
        lambda r: f"tp {tp[r]} and kv_heads {kv[r]}: one must divide the other",
    )  # fmt: skip
    mp = model_parallel_degree(tp, pp, cp)
    problems.add_where(
        problems.ok_for("tp", "pp", "cp", "num_gpus") & (v["num_gpus"] % mp != 0), "num_gpus",
        lambda r: f"num_gpus {v['num_gpus'][r]} is not divisible by tp·pp·cp = "
        f"{tp[r]}·{pp[r]}·{cp[r]} = {mp[r]}",
    )  # fmt: skip
    dp = np.maximum(data_parallel_degree(v["num_gpus"], tp, pp, cp), 1)
    per_step = dp * v["micro_batch"]
    batch_ok = problems.ok_for("tp", "pp", "cp", "num_gpus", "global_batch", "micro_batch")
    problems.add_where(
        batch_ok & (v["global_batch"] % per_step != 0), "global_batch",
        lambda r: f"global_batch {v['global_batch'][r]} is not divisible by dp·micro_batch = "
        f"{dp[r]}·{v['micro_batch'][r]} = {per_step[r]}",
    )  # fmt: skip
    grad_accum = np.maximum(v["global_batch"] // per_step, 1)
    problems.add_where(
        problems.ok_for("cp", "seq_len") & (cp > 1) & (v["seq_len"] % (2 * cp) != 0), "seq_len",
        lambda r: f"seq_len {v['seq_len'][r]} is not divisible by 2·cp = {2 * cp[r]} "
        "(causal load balancing)",
    )  # fmt: skip
    ok = problems.ok_for("vpp", "pp")
    problems.add_where(ok & (vpp > 1) & (pp == 1), "vpp", lambda r: f"vpp {vpp[r]} needs pp > 1")
    problems.add_where(
        problems.ok_for("vpp", "pp", "global_batch") & (vpp > 1) & (pp > 1)
        & (grad_accum % pp != 0), "vpp",
        lambda r: f"interleaved 1F1B (vpp {vpp[r]}) needs grad_accum {grad_accum[r]} divisible "
        f"by pp {pp[r]}",
    )  # fmt: skip
    problems.add_where(
        ok & (v["layers"] < pp * vpp), "pp",
        lambda r: f"layers {v['layers'][r]} < pp·vpp = {pp[r]}·{vpp[r]}",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("precision", "gpu") & v["fp8"] & ~np.isfinite(v["fp8_peak"]),
        "precision",
        lambda r: f"GPU {gpu_names[r]} has no FP8 tensor cores; allowed: bf16 (16-bit mixed "
        "precision: bf16, or fp16 on a GPU without bf16 such as V100)",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("sharding", "num_gpus", "tp", "pp", "cp")
        & (v["sharding"] == Sharding.HSDP) & (dp == 1), "sharding",
        lambda r: "hsdp needs dp > 1",
    )  # fmt: skip
    v["dp"] = dp
    v["grad_accum"] = grad_accum


def build_configs(
    frame: pd.DataFrame,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    frameworks: Mapping[str, FrameworkProfile],
    origin: str = "input",
    skip_invalid: bool = False,
) -> tuple[Configs, np.ndarray, pd.DataFrame]:
    """Validate ``frame`` against the catalogues and return ``(configs, valid_rows, rejects)``.

    ``hardware``, ``models`` and ``frameworks`` are the caller's catalogues (those of a
    :class:`~trainscale.sim.catalogue.Catalogue`); a GPU's ``gpu_index`` indexes the sorted keys
    of ``hardware``.

    ``valid_rows`` holds the row positions of ``frame`` that are in ``configs``; ``rejects`` has
    the input columns of each rejected row plus :data:`trainscale.schema.REJECT_COLUMNS` (``row``,
    ``column`` and ``reason``; one line per problem). Without ``skip_invalid`` any problem raises
    :class:`ConfigurationError` listing every invalid row, column and the allowed values.
    """
    _check_columns(frame)
    frame = frame.reset_index(drop=True)
    problems = _Problems(len(frame))
    v: dict[str, np.ndarray] = _resolve_shape(frame, models, problems)
    v.update(
        _positive_ints(
            frame, ("seq_len", "global_batch", "micro_batch", "num_gpus", "tp", "pp"), problems
        )
    )
    v.update(_positive_ints(frame, ("cp", "vpp"), problems, default=1))
    gpu_names, gpu = _gpu_attributes(frame, hardware, problems)
    gpus_per_node = _optional_positive(frame, "gpus_per_node", problems)
    nic_gbit_per_s = _optional_positive(frame, "nic_gbit_per_s_per_gpu", problems)
    power_limit = _power_limit(frame, gpu, problems)
    v["sharding"] = _choices(frame, "sharding", SHARDINGS, problems)
    v["recompute"] = _choices(frame, "recompute", RECOMPUTE_MODES, problems)
    precision = _choices(frame, "precision", PRECISIONS, problems)
    v["fp8"] = precision == PRECISIONS.index("fp8")
    v["fp8_peak"] = gpu["fp8"]
    v["sequence_parallel"] = _sequence_parallel(frame, v["tp"], problems)
    v.update(_framework_behaviours(frame, v, frameworks, problems))
    _plan_rules(v, gpu_names, problems)

    valid = np.flatnonzero(~problems.bad)
    items = problems.sorted_items()
    if items and not skip_invalid:
        raise ConfigurationError(items, origin=origin)
    fp8 = v["fp8"]
    gpn = np.where(np.isfinite(gpus_per_node), gpus_per_node, gpu["gpus_per_node"])
    columns = {
        **{name: v[name] for name in (*_INT_SHAPE, "swiglu", "tied_embeddings")},
        **{name: v[name] for name in ("seq_len", "global_batch", "micro_batch", "num_gpus")},
        "gpus_per_node": np.minimum(gpn, v["num_gpus"]).astype(np.int64),
        **{name: v[name] for name in ("tp", "pp", "cp", "vpp", "dp", "grad_accum")},
        "sharding": v["sharding"],
        "recompute": v["recompute"],
        "fp8": fp8,
        "sequence_parallel": v["sequence_parallel"],
        **{name: v[name] for name in _FRAMEWORK_FIELDS},
        "gpu_index": gpu["gpu_index"],
        "system": gpu["system"],
        "peak_flops_per_s": np.where(fp8, gpu["fp8"], gpu["bf16"]),
        "bf16_flops_per_s": gpu["bf16"],
        "gemm_efficiency_max": np.where(fp8, gpu["eff_fp8"], gpu["eff_bf16"]),
        "bf16_gemm_efficiency_max": gpu["eff_bf16"],
        "gemm_half_efficiency_dim": gpu["d0"],
        "attention_efficiency_max": np.select(
            [v["fused_attention"], v["attention_kernel"] == ATTENTION_KERNELS.index("triton")],
            [gpu["attn_fused"], TRITON_ATTENTION_RELATIVE_SPEED * gpu["attn"]],
            gpu["attn"],
        ),
        "flash_attention": gpu["flash"],
        "hbm_bytes": gpu["hbm_bytes"],
        "hbm_bytes_per_s": gpu["hbm_bytes_per_s"],
        "nvlink_bytes_per_s": gpu["nvlink_bytes_per_s"],
        "nvls": gpu["nvls"],
        "nic_bytes_per_s": np.where(
            np.isfinite(nic_gbit_per_s), nic_gbit_per_s * 1e9 / 8, gpu["nic_bytes_per_s"]
        ),
        "fabric_factor": gpu["fabric_factor"],
        "tdp_w": gpu["tdp_w"],
        "idle_w": gpu["idle_w"],
        "power_limit_w": np.where(np.isfinite(power_limit), power_limit, gpu["tdp_w"]),
    }
    everything = len(valid) == len(frame)
    configs = Configs(
        **{
            name: np.asarray(columns[name]) if everything else np.asarray(columns[name])[valid]
            for name in _FIELD_NAMES
        }
    )
    records = frame.iloc[[row for row, _, _ in items]].reset_index(drop=True) if items else None
    if records is not None:
        rejects = records.assign(
            row=[row for row, _, _ in items],
            column=[column for _, column, _ in items],
            reason=[message for _, _, message in items],
        )
    else:
        rejects = pd.DataFrame(columns=[*frame.columns, *names(REJECT_COLUMNS)])
    return configs, valid, rejects


_FIELD_NAMES = tuple(f.name for f in fields(Configs))
_FRAMEWORK_FIELDS = (
    "framework", *BOOLEAN_BEHAVIOURS, "attention_kernel", "fused_attention", "per_tensor_gather",
    "fp8_recipe", "cp_comm_type", "deferred_grad_sync",
    "fp8_cast_bytes",
    "ddp_bucket_params", "host_overhead_s",
)  # fmt: skip
