"""The hardware of every row: its GPU's and system's catalogue attributes, and its power limit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.io.suggest import did_you_mean
from trainscale.sim.cells import fmt as _fmt
from trainscale.sim.cells import raw as _raw
from trainscale.sim.configs.columns import coded_text, optional_number, per_row, text_lookup
from trainscale.sim.configs.problems import Problems
from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["gpu_attributes", "power_limits"]


def _gpu_hint(hardware: HardwareCatalog, name: object) -> str:
    """The "did you mean" of an unknown GPU name: the GPU whose catalogue ``aliases`` (the
    published wordings, ``H100``) match it, else the closest key by spelling."""
    match = hardware.gpu_for_text(str(name))
    return f" (did you mean {match!r}?)" if match else did_you_mean(name, hardware.gpus)


def gpu_attributes(
    frame: pd.DataFrame, hardware: HardwareCatalog, problems: Problems
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    gpu_keys = sorted(hardware.gpus)
    index = text_lookup(frame, "gpu", {k: i for i, k in enumerate(gpu_keys)}, -1)
    gpu_codes, gpu_texts = coded_text(frame, "gpu")
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
    system_codes, system_names = coded_text(frame, "system")
    named = per_row(system_codes, system_names, lambda v: v != "")
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


def power_limits(frame: pd.DataFrame, gpu: dict[str, np.ndarray], problems: Problems) -> np.ndarray:
    """Optional ``power_limit_w``: above the GPU's idle power and at most its TDP; NaN where
    absent (0 or empty: the TDP, no limit)."""
    name = "power_limit_w"
    values = optional_number(
        frame, name, problems,
        " and for this GPU above its idle power, at most its TDP; 0 or empty for no limit",
    )  # fmt: skip
    bad = np.isfinite(values) & ~((values > gpu["idle_w"]) & (values <= gpu["tdp_w"]))
    problems.add_where(
        bad & ~problems.bad_by_column.get("gpu", np.zeros(len(frame), dtype=bool)),
        name,
        lambda r: f"{_fmt(_raw(frame, name, r))} W is not allowed for this GPU: a power limit "
        f"must lie above its idle power ({gpu['idle_w'][r]:g} W) and at most its TDP "
        f"({gpu['tdp_w'][r]:g} W); leave empty for no limit",
    )  # fmt: skip
    return np.where(bad, np.nan, values)
