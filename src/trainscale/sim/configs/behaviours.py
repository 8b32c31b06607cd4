"""The software stack of every row: its framework profile's behaviours, then the row's overrides."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from trainscale.io.suggest import did_you_mean
from trainscale.schema import (
    ATTENTION_KERNELS,
    FP8_RECIPES,
    SHARD_GRANULARITIES,
    SHARDINGS,
    Sharding,
)
from trainscale.schema.choices import DEFAULT_FRAMEWORK
from trainscale.sim.cells import raw as _raw
from trainscale.sim.configs.columns import optional_bool, optional_choice, text_lookup
from trainscale.sim.configs.problems import Problems
from trainscale.sim.degrees import data_parallel_degree
from trainscale.sim.frameworks import (
    BOOLEAN_BEHAVIOURS,
    CHOICE_BEHAVIOURS,
    FrameworkProfile,
    fp8_cast_bytes_per_element,
)

__all__ = ["FRAMEWORK_FIELDS", "framework_behaviours"]


def framework_behaviours(
    frame: pd.DataFrame,
    v: dict[str, np.ndarray],
    profiles: Mapping[str, FrameworkProfile],
    problems: Problems,
) -> dict[str, np.ndarray]:
    """The software stack of every row: its profile's behaviours, then the row's overrides;
    overrides that contradict the row and plans the profile refuses are problems. ``profiles``
    is the caller's catalogue (``Catalogue.frameworks``): a row's ``framework`` code indexes its
    keys, in their order (``Catalogue.framework_keys``)."""
    framework = _framework_codes(frame, profiles, problems)
    ordered = list(profiles.values())
    out, given = _behaviours(frame, v, framework, ordered, problems)
    _contradicting_overrides(v, out, given, problems)
    _refused_plans(v, framework, ordered, problems)
    return out


def _framework_codes(
    frame: pd.DataFrame, profiles: Mapping[str, FrameworkProfile], problems: Problems
) -> np.ndarray:
    """Each row's framework as an index into the keys of ``profiles`` (empty: the default
    framework); an unknown name is a problem that names the profile a known stack (an alias)
    runs on."""
    names = tuple(profiles)
    keys = {"": names.index(DEFAULT_FRAMEWORK)} | {k: i for i, k in enumerate(names)}
    framework = text_lookup(frame, "framework", keys, -1, lower=True)
    runs = {a.lower(): k for k, p in profiles.items() for a in p.aliases}

    def unknown(r: int) -> str:
        name = _raw(frame, "framework", r)
        profile = runs.get(str(name).strip().lower())
        hint = "" if profile else did_you_mean(name, names)
        text = f"unknown framework {name!r}{hint}; valid: {', '.join(names)} "
        return (
            text
            + "(data/frameworks.yaml)"
            + (f"; {name} runs on the {profile!r} profile" if profile else "")
        )

    problems.add_where(framework < 0, "framework", unknown)
    return np.where(framework < 0, names.index(DEFAULT_FRAMEWORK), framework)


def _choice_or_profile(
    frame: pd.DataFrame,
    name: str,
    allowed: tuple[str, ...],
    profile_values: list[str],
    framework: np.ndarray,
    problems: Problems,
) -> tuple[np.ndarray, np.ndarray]:
    """A categorical behaviour: the row's ``name`` where given, else its profile's value
    (``profile_values``, in the order of the profiles); ``(index into allowed, given mask)``."""
    index = optional_choice(frame, name, allowed, problems)
    profile = np.array([allowed.index(value) for value in profile_values])[framework]
    return np.where(index >= 0, index, profile), index >= 0


def _behaviours(
    frame: pd.DataFrame,
    v: dict[str, np.ndarray],
    framework: np.ndarray,
    ordered: list[FrameworkProfile],
    problems: Problems,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The behaviour columns of :data:`FRAMEWORK_FIELDS` and which of them each row set."""
    sharding = v["sharding"]
    out: dict[str, np.ndarray] = {"framework": framework}
    given: dict[str, np.ndarray] = {}
    for behaviour in BOOLEAN_BEHAVIOURS:
        table = np.array([[getattr(p, behaviour)[s] for s in SHARDINGS] for p in ordered])
        default = table[framework, sharding]
        out[behaviour], given[behaviour] = optional_bool(
            frame, behaviour, problems, default, "the framework profile's"
        )
    for name, allowed in CHOICE_BEHAVIOURS.items():
        values = [getattr(p, name) for p in ordered]
        out[name], given[name] = _choice_or_profile(
            frame, name, allowed, values, framework, problems
        )
    out["per_tensor_gather"] = out.pop("shard_granularity") == SHARD_GRANULARITIES.index("tensor")
    out["fused_attention"] = out["attention_kernel"] == ATTENTION_KERNELS.index("fused")
    cast = np.array([fp8_cast_bytes_per_element(r) for r in FP8_RECIPES])
    out["fp8_cast_bytes"] = cast[out["fp8_recipe"]]
    gathered = np.isin(sharding, (Sharding.ZERO2, Sharding.FSDP, Sharding.HSDP))
    defers = np.array([p.pipeline_defers_grad_sync for p in ordered])[framework]
    out["deferred_grad_sync"] = defers & gathered & (v["pp"] > 1)
    out["distributed_optimizer"] = np.array([p.distributed_optimizer for p in ordered])[framework]
    dp = np.maximum(data_parallel_degree(v["num_gpus"], v["tp"], v["pp"], v["cp"]), 1)
    bucket_min = np.array([p.ddp_bucket_params for p in ordered])[framework]
    bucket_per_dp = np.array([p.ddp_bucket_params_per_dp_rank for p in ordered])[framework]
    out["ddp_bucket_params"] = np.maximum(bucket_min, bucket_per_dp * dp)
    out["host_overhead_s"] = np.array([p.host_overhead_per_layer_s for p in ordered])[framework]
    return out, given


def _contradicting_overrides(
    v: dict[str, np.ndarray],
    out: dict[str, np.ndarray],
    given: dict[str, np.ndarray],
    problems: Problems,
) -> None:
    """Overrides that contradict the rest of the row."""
    sharding = v["sharding"]
    sharded = (sharding == Sharding.FSDP) | (sharding == Sharding.HSDP)
    ok = problems.ok_for("sharding", "shard_granularity")
    problems.add_where(
        ok & given["shard_granularity"] & ~sharded, "shard_granularity",
        lambda r: f"shard_granularity applies to sharded parameters (fsdp, hsdp); sharding is "
        f"{SHARDINGS[sharding[r]]}",
    )  # fmt: skip
    problems.add_where(
        problems.ok_for("precision", "fp8_recipe") & given["fp8_recipe"] & ~v["fp8"], "fp8_recipe",
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


def _refused_plans(
    v: dict[str, np.ndarray],
    framework: np.ndarray,
    ordered: list[FrameworkProfile],
    problems: Problems,
) -> None:
    """Plans the stack cannot run, from its profile (data/frameworks.yaml), never from its name:
    the shardings its pipeline engine refuses with pp > 1 (``pipeline_shardings``; DeepSpeed:
    ZeRO-2/3) and vpp > 1 without interleaved 1F1B (``pipeline_schedules``)."""
    sharding = v["sharding"]
    piped = np.array([[s in p.pipeline_shardings for s in SHARDINGS] for p in ordered])
    problems.add_where(
        problems.ok_for("framework", "sharding", "pp") & ~piped[framework, sharding]
        & (v["pp"] > 1), "sharding",
        lambda r: f"the {ordered[framework[r]].key} profile runs pipeline parallelism (pp > 1) "
        f"only with {', '.join(ordered[framework[r]].pipeline_shardings)} (its "
        f"pipeline_shardings, data/frameworks.yaml); sharding is {SHARDINGS[sharding[r]]} with "
        f"pp {v['pp'][r]}: use one of those, or pp 1",
    )  # fmt: skip
    interleaves = np.array([p.interleaves for p in ordered])[framework]
    problems.add_where(
        problems.ok_for("framework", "vpp") & ~interleaves & (v["vpp"] > 1), "vpp",
        lambda r: f"the {ordered[framework[r]].key} profile has no interleaved 1F1B (its "
        f"pipeline_schedules: {', '.join(ordered[framework[r]].pipeline_schedules)}, "
        f"data/frameworks.yaml); vpp is {v['vpp'][r]}: use vpp 1",
    )  # fmt: skip


FRAMEWORK_FIELDS = (
    "framework", *BOOLEAN_BEHAVIOURS, "attention_kernel", "fused_attention", "per_tensor_gather",
    "fp8_recipe", "cp_comm_type", "moe_dispatcher", "deferred_grad_sync", "distributed_optimizer",
    "fp8_cast_bytes",
    "ddp_bucket_params", "host_overhead_s",
)  # fmt: skip
