"""``predict``: the simulator's entry point, DataFrame in, DataFrame out, vectorised.

Pipeline per call: validate and resolve the configurations (:mod:`trainscale.sim.configs`), derive
one
GPU's work per micro-batch (:mod:`trainscale.sim.model.work`), place the parallel groups on nodes
(:mod:`trainscale.sim.plan.layout`), schedule compute and communication
(:mod:`trainscale.sim.plan.schedule`), then memory (:mod:`trainscale.sim.model.memory`) and power
(:mod:`trainscale.sim.system.power`). Every step works on numpy arrays over all configurations at
once.

The catalogues and the calibration are the caller's: every library function passes both.
:func:`predict` and :func:`predict_with_rejects` are also the public entry points
(``trainscale.predict``), and for a user's convenience they load the shipped ones
(``data/``, ``TRAINSCALE_DATA``) for whichever of the two is not given.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from trainscale.schema import (
    ATTENTION_KERNELS,
    CONFIGURATION_COLUMNS,
    CP_COMM_TYPES,
    FP8_RECIPES,
    FRAMEWORKS,
    PRECISIONS,
    RECOMPUTE_MODES,
    SHARDINGS,
)
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import Catalogue, load_catalogue
from trainscale.sim.configs import Configs, build_configs
from trainscale.sim.model.flops import hardware_flops_per_token, model_flops_per_token
from trainscale.sim.model.memory import memory_bytes_per_gpu
from trainscale.sim.model.work import block_work
from trainscale.sim.plan.layout import layout
from trainscale.sim.plan.schedule import step_times
from trainscale.sim.support import block_params_b, support
from trainscale.sim.system.collectives import NcclConstants, Network
from trainscale.sim.system.power import power_per_gpu
from trainscale.version import __version__

__all__ = ["predict", "predict_arrays", "predict_with_rejects"]

_GIB = 2.0**30


def _network(c: Configs, cal: Calibration, nccl: NcclConstants) -> Network:
    return Network(
        nvlink_bytes_per_s=cal.nvlink_efficiency * c.nvlink_bytes_per_s,
        nic_bytes_per_s=cal.nic_efficiency * c.fabric_factor * c.nic_bytes_per_s,
        nvls_bytes_per_s=np.where(c.nvls, cal.nvls_efficiency * c.nvlink_bytes_per_s, 0.0),
        latency_scale=cal.nccl_latency_scale,
        constants=nccl,
        congestion_per_doubling=cal.congestion_per_doubling,
        fill_chunks=cal.nccl_fill_chunks,
    )


def predict_arrays(c: Configs, cal: Calibration, catalogue: Catalogue) -> dict[str, np.ndarray]:
    """Predict every metric for validated configurations (built from ``catalogue``, see
    :func:`_configs`); arrays of shape ``(len(c),)``."""
    work = block_work(c)
    place = layout(c)
    t = step_times(c, work, place, _network(c, cal, catalogue.nccl), cal)
    step = t["step_time_s"]
    tokens_per_step = (c.global_batch * c.seq_len).astype(np.float64)
    tokens_per_s = tokens_per_step / step
    shape = (c.layers, c.hidden, c.heads, c.kv_heads, c.ffn, c.vocab, c.swiglu, c.seq_len)
    model_flops = model_flops_per_token(*shape)
    hardware_flops = hardware_flops_per_token(*shape, c.recompute)
    peak_total = c.num_gpus * c.peak_flops_per_s
    memory = memory_bytes_per_gpu(c, work, place, cal)
    power = power_per_gpu(
        dense_s=t["dense_s"], memory_bound_s=t["memory_bound_s"],
        exposed_comm_s=t["exposed_comm_s"], step_time_s=step, tdp_w=c.tdp_w, idle_w=c.idle_w,
        power_limit_w=c.power_limit_w, cal=cal,
    )  # fmt: skip
    lo, hi, extrapolation = _interval_factors(c, cal, catalogue.gpu_keys)
    return {
        "dp": c.dp,
        "grad_accum": c.grad_accum,
        "step_time_s": step,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": tokens_per_s / c.num_gpus,
        "mfu": model_flops * tokens_per_s / peak_total,
        "hfu": hardware_flops * tokens_per_s / peak_total,
        "compute_s": t["compute_s"],
        "comm_s": t["comm_s"],
        "allgather_s": t["allgather_s"],
        "reducescatter_s": t["reducescatter_s"],
        "allreduce_s": t["allreduce_s"],
        "p2p_s": t["p2p_s"],
        "straggler_s": t["straggler_s"],
        "exposed_comm_s": t["exposed_comm_s"],
        "exposed_comm_frac": t["exposed_comm_s"] / step,
        "bubble_s": t["bubble_s"],
        "host_stall_s": t["host_stall_s"],
        "mem_gib_per_gpu": memory / _GIB,
        "fits_memory": memory <= cal.memory_usable_fraction * c.hbm_bytes,
        "power_w_per_gpu": power,
        "energy_j_per_token": power * c.num_gpus / tokens_per_s,
        "tokens_per_s_per_gpu_lo": tokens_per_s / c.num_gpus * lo,
        "tokens_per_s_per_gpu_hi": tokens_per_s / c.num_gpus * hi,
        "step_time_s_lo": step / hi,
        "step_time_s_hi": step / lo,
        "extrapolation": extrapolation,
    }


def _interval_factors(
    c: Configs, cal: Calibration, gpu_keys: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """``exp(-q·sigma)`` and ``exp(+q·sigma)`` per configuration: the 80 % interval of
    tokens/s per GPU as factors of the prediction (:mod:`trainscale.sim.intervals`), widened by
    the out-of-support flags, and the ``extrapolation`` column (:mod:`trainscale.sim.support`);
    NaN and empty flags when the calibration has no ``intervals`` block."""
    if cal.intervals is None:
        nan = np.full(len(c), np.nan)
        return nan, nan, _strings(np.zeros(len(c), np.int32), ("",))
    flags = support(
        cal.intervals.facts, gpu=c.gpu_index, gpu_keys=gpu_keys, framework=c.framework,
        sharding=c.sharding, num_gpus=c.num_gpus,
        params_b=block_params_b(c.layers, c.hidden, c.heads, c.kv_heads, c.ffn, c.swiglu),
        seq_len=c.seq_len, degrees={"tp": c.tp, "pp": c.pp, "cp": c.cp},
    )  # fmt: skip
    lower, upper = cal.intervals.log_factors(
        c.framework, c.num_gpus, c.gpu_index, gpu_keys, flags.widening
    )
    return np.exp(lower), np.exp(upper), flags.extrapolation


def _strings(codes: np.ndarray, categories: tuple[str, ...] | list[str]) -> pd.Series:
    """A pandas ``str`` column from category codes, built by Arrow (several times faster than
    from an object array of Python strings)."""
    arrow = pa.DictionaryArray.from_arrays(
        pa.array(np.asarray(codes, dtype=np.int32)), pa.array(list(categories), pa.large_string())
    ).cast(pa.large_string())
    return pd.Series(pd.array(arrow, dtype=pd.StringDtype("pyarrow", na_value=np.nan)))


def _resolved_configuration(c: Configs) -> dict[str, np.ndarray | pd.Series]:
    """Configuration columns as resolved (catalogue shape, defaults) for rows in ``c``."""
    return {
        "layers": c.layers,
        "hidden": c.hidden,
        "heads": c.heads,
        "kv_heads": c.kv_heads,
        "ffn": c.ffn,
        "vocab": c.vocab,
        "mlp": _strings(np.where(c.swiglu, 0, 1), ("swiglu", "gelu")),
        "gpus_per_node": c.gpus_per_node,
        "nic_gbit_per_s_per_gpu": c.nic_bytes_per_s * 8 / 1e9,
        "power_limit_w": c.power_limit_w,
        "cp": c.cp,
        "vpp": c.vpp,
        "sharding": _strings(c.sharding, SHARDINGS),
        "recompute": _strings(c.recompute, RECOMPUTE_MODES),
        "precision": _strings(c.fp8.astype(np.int32), PRECISIONS),
        "sequence_parallel": c.sequence_parallel,
        "system": c.system,
        "framework": _strings(c.framework, FRAMEWORKS),
        "overlap_grad_reduce": c.overlap_grad_reduce,
        "overlap_param_gather": c.overlap_param_gather,
        "tp_comm_overlap": c.tp_comm_overlap,
        "fused_kernels": c.fused_kernels,
        "shard_granularity": _strings(c.per_tensor_gather.astype(np.int32), ("layer", "tensor")),
        "attention_kernel": _strings(c.attention_kernel, ATTENTION_KERNELS),
        "fp8_recipe": _strings(np.where(c.fp8, c.fp8_recipe, len(FP8_RECIPES)), [*FP8_RECIPES, ""]),
        "repeat_kv": c.repeat_kv,
        "cp_comm_type": _strings(c.cp_comm_type, CP_COMM_TYPES),
    }


#: Columns written as the simulator resolved them even when the input had them: the framework's
#: effective behaviours (an empty override means the profile's value, which the output shows) and
#: the effective power limit (empty: the GPU's TDP).
_EFFECTIVE = (
    "system", "framework", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
    "fused_kernels", "shard_granularity", "attention_kernel", "fp8_recipe", "repeat_kv",
    "cp_comm_type", "power_limit_w",
)  # fmt: skip


def _configs(
    configurations: pd.DataFrame, catalogue: Catalogue, *, origin: str, skip_invalid: bool = False
) -> tuple[Configs, np.ndarray, pd.DataFrame]:
    """:func:`~trainscale.sim.configs.build_configs` with the catalogue's parts."""
    return build_configs(
        configurations, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks, origin=origin, skip_invalid=skip_invalid,
    )  # fmt: skip


def _given_or_shipped(
    catalogue: Catalogue | None, calibration: Calibration | None
) -> tuple[Catalogue, Calibration]:
    """The caller's catalogue and calibration; the shipped one for either not given."""
    return (
        catalogue if catalogue is not None else load_catalogue(),
        calibration if calibration is not None else load_calibration(),
    )


def _assemble(
    frame: pd.DataFrame, valid: np.ndarray, c: Configs, cal: Calibration, catalogue: Catalogue
) -> pd.DataFrame:
    rows = frame.iloc[valid].reset_index(drop=True)
    # One dict, one DataFrame: a replaced column keeps its place, as ``out[name] = …`` would, at a
    # fraction of the cost of inserting fifty columns one by one.
    columns: dict[str, object] = {name: rows[name] for name in rows.columns}
    resolved = _resolved_configuration(c)
    for column in CONFIGURATION_COLUMNS:
        if column.name in resolved and (column.name not in columns or column.name in _EFFECTIVE):
            columns[column.name] = resolved[column.name]
    columns.update(predict_arrays(c, cal, catalogue))
    return pd.DataFrame(columns, copy=False).assign(
        source="sim", simulator_version=__version__, calibration_id=cal.calibration_id
    )


def predict_with_rejects(
    configurations: pd.DataFrame,
    *,
    catalogue: Catalogue | None = None,
    calibration: Calibration | None = None,
    origin: str = "input",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predict the valid rows; return ``(results, rejects)``.

    ``rejects`` holds every invalid row's input columns with ``row`` (0-based position in the
    input), ``column`` and ``reason`` — one line per problem. ``catalogue`` and ``calibration``
    as in :func:`predict` (the shipped ones when not given).
    """
    catalogue, cal = _given_or_shipped(catalogue, calibration)
    configs, valid, rejects = _configs(configurations, catalogue, origin=origin, skip_invalid=True)
    return _assemble(configurations.reset_index(drop=True), valid, configs, cal, catalogue), rejects


def predict(
    configurations: pd.DataFrame,
    *,
    catalogue: Catalogue | None = None,
    calibration: Calibration | None = None,
    origin: str = "input",
) -> pd.DataFrame:
    """Predict step time, throughput, MFU, communication, memory and power per configuration.

    Parameters
    ----------
    configurations
        One row per configuration with the columns of
        :data:`trainscale.schema.CONFIGURATION_COLUMNS` (``model`` or the shape columns,
        ``seq_len``, ``global_batch``, ``micro_batch``, ``gpu``, ``num_gpus``, ``tp``, ``pp``,
        ``sharding``, ``recompute``, ``precision``; optional ``cp``, ``vpp``,
        ``sequence_parallel``, ``gpus_per_node``, ``nic_gbit_per_s_per_gpu``). Other columns are
        carried through untouched.
    catalogue
        The hardware, model, framework and NCCL catalogues
        (:func:`trainscale.sim.catalogue.load_catalogue`). Not given: the shipped ones, loaded
        (once per process) from ``data/`` or ``TRAINSCALE_DATA``; a convenience of this public
        entry point only: every library function passes its caller's.
    calibration
        Parameter values (:func:`trainscale.sim.calibration.load_calibration`). Not given: the
        shipped ``data/calibration.yaml``, as for ``catalogue``.

    Returns
    -------
    pandas.DataFrame
        The input columns, any configuration column the input left out (as resolved), then
        ``dp``, ``grad_accum``, ``step_time_s``, ``tokens_per_s``, ``tokens_per_s_per_gpu``,
        ``mfu``, ``hfu``, ``compute_s``, ``comm_s``, ``allgather_s``, ``reducescatter_s``,
        ``allreduce_s``, ``p2p_s``, ``straggler_s``, ``exposed_comm_s``, ``exposed_comm_frac``,
        ``bubble_s``, ``host_stall_s``, ``mem_gib_per_gpu``, ``fits_memory``, ``power_w_per_gpu``,
        ``energy_j_per_token``, ``source`` (``"sim"``), ``simulator_version``,
        ``calibration_id``. Units are in the names (see :mod:`trainscale.schema`).

    Raises
    ------
    trainscale.errors.ConfigurationError
        Listing every invalid row, its column and the allowed values.
    """
    catalogue, cal = _given_or_shipped(catalogue, calibration)
    configs, valid, _ = _configs(configurations, catalogue, origin=origin)
    return _assemble(configurations.reset_index(drop=True), valid, configs, cal, catalogue)
