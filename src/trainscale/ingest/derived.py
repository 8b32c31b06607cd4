"""Result columns derived from a run's configuration and its measured rates.

- :func:`resolved_shape`: the model shape of a configuration (the catalogue model's fields,
  overridden by explicit ones);
- MFU / HFU: the schema's definition, model (hardware) FLOPs per token × tokens/s ÷ (num_gpus ×
  dense peak of the precision), :mod:`trainscale.sim.model.flops`, when the shape, sequence
  length and a catalogue GPU are known; else the log's own median MFU when positive;
- ``energy_j_per_token`` = power per GPU × num_gpus ÷ tokens/s (else the logged energy per step
  × num_gpus ÷ tokens per step); ``exposed_comm_frac`` = exposed communication ÷ step time;
- ``dp`` and ``grad_accum`` from the plan (:func:`trainscale.sim.degrees.data_parallel_degree`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from trainscale.schema import MODEL_SHAPE_COLUMNS, RECOMPUTE_MODES, names
from trainscale.sim.degrees import data_parallel_degree, expert_data_parallel_degree

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "add_derived_metrics",
    "flops_per_token",
    "peak_flops",
    "resolved_shape",
    "tokens_per_step",
]

#: The model-shape fields of a configuration (``layers`` … ``mlp``).
_SHAPE = tuple(names(MODEL_SHAPE_COLUMNS))


def resolved_shape(cfg: dict[str, Any], models: Mapping[str, ModelShape]) -> dict[str, Any]:
    """Shape fields: the catalogue model's, overridden by explicit fields."""
    shape: dict[str, Any] = {}
    model = models.get(cfg.get("model", ""))
    if model is not None:
        shape = {name: getattr(model, name) for name in _SHAPE}
    shape.update({k: cfg[k] for k in _SHAPE if k in cfg})
    return shape


def flops_per_token(
    cfg: dict[str, Any], models: Mapping[str, ModelShape], *, hardware: bool
) -> float | None:
    """Model (or hardware) FLOPs per token, or None when the shape or seq_len is unknown."""
    from trainscale.sim.model.flops import hardware_flops_per_token, model_flops_per_token
    from trainscale.sim.model.params import TransformerShape

    model = models.get(cfg.get("model", ""))
    if model is not None and not model.plain:
        # A mixture-of-experts (or MLA, head_dim) model: model FLOPs over its active weights
        # (trainscale.sim.model.counts); recomputation in such blocks, and a shape overridden
        # field by field, are not modelled: no number rather than a dense one.
        if hardware or "seq_len" not in cfg or any(k in cfg for k in _SHAPE):
            return None
        from trainscale.sim.model.counts import model_flops_per_token as active_flops

        return float(active_flops(model, cfg["seq_len"]))
    shape = resolved_shape(cfg, models)
    if any(k not in shape for k in _SHAPE) or "seq_len" not in cfg:
        return None
    transformer = TransformerShape(
        shape["layers"], shape["hidden"], shape["heads"], shape["kv_heads"], shape["ffn"],
        shape["vocab"], shape["mlp"] == "swiglu",
    )  # fmt: skip
    if not hardware:
        return float(model_flops_per_token(transformer, cfg["seq_len"]))
    if "recompute" not in cfg:
        return None
    recompute = RECOMPUTE_MODES.index(cfg["recompute"])
    return float(hardware_flops_per_token(transformer, cfg["seq_len"], recompute))


def peak_flops(cfg: dict[str, Any], hardware: HardwareCatalog) -> float | None:
    """Dense peak FLOP/s per GPU at the configured precision, or None."""
    gpu = hardware.gpus.get(cfg.get("gpu", ""))
    if gpu is None:
        return None
    precision = cfg.get("precision", "bf16")
    if precision == "bf16":
        return gpu.bf16_flops_per_s
    if precision == "fp8":
        return gpu.fp8_flops_per_s
    return None


def tokens_per_step(cfg: dict[str, Any]) -> int | None:
    """``global_batch × seq_len`` (tokens per optimizer step), or None when either is unstated."""
    if "global_batch" in cfg and "seq_len" in cfg:
        return cfg["global_batch"] * cfg["seq_len"]
    return None


def add_derived_metrics(
    row: dict[str, Any],
    cfg: dict[str, Any],
    catalogue: tuple[HardwareCatalog, Mapping[str, ModelShape]],
    *,
    logged_mfu: float,
    energy_per_step: float,
) -> None:
    """Set ``mfu``, ``hfu``, ``energy_j_per_token``, ``exposed_comm_frac``, ``dp``, ``ep`` (1
    unless given), ``etp`` (``tp`` unless given), ``edp`` and ``grad_accum`` of ``row`` (which
    holds the measured rates) where they can be derived.

    ``logged_mfu`` is the log's own median MFU (fraction; NaN without one), ``energy_per_step``
    its median energy per GPU per step (J; NaN without one).
    """
    hardware, models = catalogue
    num_gpus = cfg.get("num_gpus")
    tokens_per_s = row.get("tokens_per_s", np.nan)
    tokens_per_s = np.nan if tokens_per_s is None else tokens_per_s
    peak = peak_flops(cfg, hardware)
    flops = flops_per_token(cfg, models, hardware=False)
    if flops and peak and num_gpus and tokens_per_s > 0:
        row["mfu"] = flops * tokens_per_s / (num_gpus * peak)
        hardware_flops = flops_per_token(cfg, models, hardware=True)
        if hardware_flops:
            row["hfu"] = hardware_flops * tokens_per_s / (num_gpus * peak)
    elif logged_mfu > 0:
        row["mfu"] = logged_mfu
    per_step = tokens_per_step(cfg)
    power_w = row.get("power_w_per_gpu")
    if power_w is not None and not math.isnan(power_w) and num_gpus and tokens_per_s > 0:
        row["energy_j_per_token"] = power_w * num_gpus / tokens_per_s
    elif not math.isnan(energy_per_step) and num_gpus and per_step:
        row["energy_j_per_token"] = energy_per_step * num_gpus / per_step
    exposed, step_time = row.get("exposed_comm_s"), row.get("step_time_s")
    if exposed is not None and step_time and not math.isnan(exposed):
        row["exposed_comm_frac"] = exposed / step_time
    if num_gpus and all(cfg.get(k) for k in ("tp", "pp")):
        row["dp"] = data_parallel_degree(num_gpus, cfg["tp"], cfg["pp"], cfg.get("cp", 1))
        row["ep"], row["etp"] = cfg.get("ep", 1), cfg.get("etp", cfg["tp"])
        row["edp"] = int(expert_data_parallel_degree(num_gpus, cfg["pp"], row["ep"], row["etp"]))
        if row["dp"] and "global_batch" in cfg and "micro_batch" in cfg:
            row["grad_accum"] = cfg["global_batch"] // (row["dp"] * cfg["micro_batch"])
