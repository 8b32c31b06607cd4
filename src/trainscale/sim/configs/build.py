"""Validate a configuration table against the catalogues and assemble :class:`Configs`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.schema import (
    ATTENTION_KERNELS,
    FINETUNE_MODES,
    MOE_ROUTINGS,
    PRECISIONS,
    RECOMPUTE_MODES,
    REJECT_COLUMNS,
    SHARDINGS,
    names,
)
from trainscale.sim.configs.arrays import FIELD_NAMES, Configs, compose
from trainscale.sim.configs.behaviours import FRAMEWORK_FIELDS, framework_behaviours
from trainscale.sim.configs.columns import (
    capacity_factors,
    choice_codes,
    lora_ranks,
    optional_choice_codes,
    optional_positive,
    positive_ints,
)
from trainscale.sim.configs.experts import expert_rules, expert_tensor_parallel
from trainscale.sim.configs.gpus import gpu_attributes, power_limits
from trainscale.sim.configs.plan import plan_rules, sequence_parallel
from trainscale.sim.configs.problems import INT_SHAPE, Problems
from trainscale.sim.configs.shape import MOE_SHAPE, check_columns, resolve_shape
from trainscale.sim.frameworks import (
    TRITON_ATTENTION_RELATIVE_SPEED,
    FrameworkProfile,
)
from trainscale.sim.model.shape import ModelShape
from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["build_configs"]


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
    of ``hardware``, a row's ``framework`` code the keys of ``frameworks`` in their order (the
    framework list, ``Catalogue.framework_keys``; no list is kept in the code).

    ``valid_rows`` holds the row positions of ``frame`` that are in ``configs``; ``rejects`` has
    the input columns of each rejected row plus :data:`trainscale.schema.REJECT_COLUMNS` (``row``,
    ``column`` and ``reason``; one line per problem). Without ``skip_invalid`` any problem raises
    :class:`ConfigurationError` listing every invalid row, column and the allowed values.
    """
    check_columns(frame)
    frame = frame.reset_index(drop=True)
    problems = Problems(len(frame))
    v, gpu = _checked(frame, hardware, models, frameworks, problems)
    valid = np.flatnonzero(~problems.bad)
    items = problems.sorted_items()
    if items and not skip_invalid:
        raise ConfigurationError(items, origin=origin)
    columns = _columns(v, gpu)
    everything = len(valid) == len(frame)
    configs = compose(
        {
            name: np.asarray(columns[name]) if everything else np.asarray(columns[name])[valid]
            for name in FIELD_NAMES
        }
    )
    return configs, valid, _rejects(frame, items)


def _checked(
    frame: pd.DataFrame,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    frameworks: Mapping[str, FrameworkProfile],
    problems: Problems,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every column read and checked, in the order the problems are reported: the model, the
    numbers, the hardware, the choices, the framework, the plan's interlocks. Returns the row
    values ``v`` and the hardware attributes ``gpu`` (with the row's optional overrides)."""
    v: dict[str, np.ndarray] = resolve_shape(frame, models, problems)
    v.update(
        positive_ints(
            frame, ("seq_len", "global_batch", "micro_batch", "num_gpus", "tp", "pp"), problems
        )
    )
    v.update(positive_ints(frame, ("cp", "vpp", "ep"), problems, default=1))
    v["etp"] = expert_tensor_parallel(frame, v["tp"], problems)
    gpu_names, gpu = gpu_attributes(frame, hardware, problems)
    gpu["given_gpus_per_node"] = optional_positive(frame, "gpus_per_node", problems)
    gpu["given_nic_gbit_per_s"] = optional_positive(frame, "nic_gbit_per_s_per_gpu", problems)
    gpu["given_power_limit_w"] = power_limits(frame, gpu, problems)
    v["sharding"] = choice_codes(frame, "sharding", SHARDINGS, problems)
    v["recompute"] = choice_codes(frame, "recompute", RECOMPUTE_MODES, problems)
    precision = choice_codes(frame, "precision", PRECISIONS, problems)
    v["fp8"] = precision == PRECISIONS.index("fp8")
    v["fp8_peak"] = gpu["fp8"]
    v["sequence_parallel"] = sequence_parallel(frame, v["tp"], problems)
    v["finetune"] = optional_choice_codes(frame, "finetune", FINETUNE_MODES, problems)
    v["lora_rank"] = lora_ranks(frame, problems)
    v["moe_routing"] = optional_choice_codes(frame, "moe_routing", MOE_ROUTINGS, problems)
    v["capacity_factor"] = capacity_factors(frame, v["moe_routing"], problems)
    v.update(framework_behaviours(frame, v, frameworks, problems))
    plan_rules(v, gpu_names, problems)
    given_gpn = gpu["given_gpus_per_node"]
    gpn = np.where(np.isfinite(given_gpn), given_gpn, gpu["gpus_per_node"])
    expert_rules(v, gpn, tuple(frameworks), problems)
    return v, gpu


def _columns(v: dict[str, np.ndarray], gpu: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The fields of every :class:`Configs` part, by name, for every row: the checked values
    joined with the hardware (the precision's peak and efficiency, the attention kernel's
    efficiency, the row's own gpus_per_node, NIC rate and power limit where given)."""
    fp8 = v["fp8"]
    gpn = np.where(
        np.isfinite(gpu["given_gpus_per_node"]), gpu["given_gpus_per_node"], gpu["gpus_per_node"]
    )
    nic_gbit_per_s = gpu["given_nic_gbit_per_s"]
    power_limit = gpu["given_power_limit_w"]
    return {
        **{name: v[name] for name in (*INT_SHAPE, "swiglu", "tied_embeddings", *MOE_SHAPE)},
        **{name: v[name] for name in ("seq_len", "global_batch", "micro_batch", "num_gpus")},
        "gpus_per_node": np.minimum(gpn, v["num_gpus"]).astype(np.int64),
        **{name: v[name] for name in ("tp", "pp", "cp", "vpp", "dp", "grad_accum")},
        **{name: v[name] for name in ("ep", "etp", "edp")},
        "sharding": v["sharding"],
        "recompute": v["recompute"],
        "fp8": fp8,
        "sequence_parallel": v["sequence_parallel"],
        "finetune": v["finetune"],
        "lora_rank": v["lora_rank"],
        "moe_routing": v["moe_routing"],
        "capacity_factor": v["capacity_factor"],
        **{name: v[name] for name in FRAMEWORK_FIELDS},
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


def _rejects(frame: pd.DataFrame, items: list[tuple[int, str, str]]) -> pd.DataFrame:
    """The input columns of each rejected row plus ``row``, ``column`` and ``reason``, one line
    per problem (no lines, but every column, when there are none)."""
    if not items:
        return pd.DataFrame(columns=[*frame.columns, *names(REJECT_COLUMNS)])
    records = frame.iloc[[row for row, _, _ in items]].reset_index(drop=True)
    return records.assign(
        row=[row for row, _, _ in items],
        column=[column for _, column, _ in items],
        reason=[message for _, _, message in items],
    )
