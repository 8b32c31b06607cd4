"""``predict``: the simulator's entry point, DataFrame in, DataFrame out, vectorised.

Pipeline per call: validate and resolve the configurations (:mod:`trainscale.sim.configs`), derive
one
GPU's work per micro-batch (:mod:`trainscale.sim.model.work`), place the parallel groups on nodes
(:mod:`trainscale.sim.plan.layout`), schedule compute and communication
(:mod:`trainscale.sim.plan.schedule`), then memory (:mod:`trainscale.sim.model.memory`) and power
(:mod:`trainscale.sim.system.power`). Every step works on numpy arrays over all configurations at
once.

Output checks (:func:`output_problems`), made by :func:`predict` and :func:`predict_with_rejects`
before a row is returned: every metric finite (the interval columns may be NaN only without an
``intervals`` block), times, memory, power and energy not negative, step time, throughput and
memory positive, and the utilisation the GPUs actually execute (HFU with attention counted under
the causal mask) at most 1. A row that fails is an error (:func:`predict`) or a reject
(:func:`predict_with_rejects`), never a number returned with exit status 0.

MFU and HFU above 1: the FLOP convention (:mod:`trainscale.sim.model.flops`, PaLM's) counts
attention without the causal mask, twice what a causal kernel executes; at very long context,
where attention dominates, the counted FLOPs can exceed what the GPUs' peak allows in the step
time. Such a row keeps its numbers (they compare with published MFU under that convention) and
carries ``mfu:X>1`` and/or ``hfu:X>1`` in its ``extrapolation`` column (``X`` with 3 significant
digits); these two flags do not widen the interval.

The catalogues and the calibration are the caller's: every library function passes both.
:func:`predict` and :func:`predict_with_rejects` are also the public entry points
(``trainscale.predict``), and for a user's convenience they load the shipped ones
(``data/``, ``TRAINSCALE_DATA``) for whichever of the two is not given.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from trainscale.errors import ConfigurationError
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    REJECT_COLUMNS,
    names,
)
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import Catalogue, load_catalogue
from trainscale.sim.configs import Configs, build_configs
from trainscale.sim.intervals import PredictionIntervals
from trainscale.sim.levels import merge_by_level, split_by_level
from trainscale.sim.memory_margin import MEMORY_REJECT_FRACTION
from trainscale.sim.model.memory import memory_bytes_per_gpu
from trainscale.sim.model.params import TransformerShape, block_params_b
from trainscale.sim.resolved import resolved_columns
from trainscale.sim.support import support
from trainscale.sim.system.power import power_per_gpu
from trainscale.sim.throughput import step_throughput
from trainscale.sim.workload import flops_per_token
from trainscale.version import __version__

__all__ = ["output_problems", "predict", "predict_arrays", "predict_with_rejects"]

_GIB = 2.0**30


def predict_arrays(c: Configs, cal: Calibration, catalogue: Catalogue) -> dict[str, np.ndarray]:
    """Predict every metric for validated configurations (built from ``catalogue``, see
    :func:`_configs`); arrays of shape ``(len(c),)``. Under a user calibration that records the
    levels its measurements ran, the other (framework, GPU) pairs keep the shipped level
    (:mod:`trainscale.sim.levels`). ``cal``'s framework offsets are read in the order of the
    catalogue's framework list (:meth:`~trainscale.sim.calibration.Calibration.for_frameworks`),
    which ``c``'s framework codes index."""
    cal = cal.for_frameworks(catalogue.framework_keys)
    split = split_by_level(c, cal, catalogue.gpu_keys, catalogue.framework_keys)
    if split is None:
        return _predict_arrays(c, cal, catalogue)
    unmeasured, shipped_level = split
    return merge_by_level(
        c, unmeasured, cal, shipped_level,
        lambda part, calibration: _predict_arrays(part, calibration, catalogue),
        catalogue.gpu_keys, catalogue.framework_keys,
    )  # fmt: skip


def _predict_arrays(c: Configs, cal: Calibration, catalogue: Catalogue) -> dict[str, np.ndarray]:
    """:func:`predict_arrays` with one calibration for every configuration."""
    work, place, t, tokens_per_s = step_throughput(c, cal, catalogue)
    step = t.step_time_s
    shape = TransformerShape(
        c.model.layers,
        c.model.hidden,
        c.model.heads,
        c.model.kv_heads,
        c.model.ffn,
        c.model.vocab,
        c.model.swiglu,
    )
    model_flops, hardware_flops = flops_per_token(c, shape, work.moe)
    peak_total = c.plan.num_gpus * c.system.peak_flops_per_s
    memory = memory_bytes_per_gpu(c.model, c.plan, c.stack, c.system, work, place, cal)
    power = power_per_gpu(
        dense_s=t.dense_s, memory_bound_s=t.memory_bound_s,
        exposed_comm_s=t.exposed_comm_s, step_time_s=step, tdp_w=c.system.tdp_w,
        idle_w=c.system.idle_w,
        power_limit_w=c.system.power_limit_w, cal=cal,
    )  # fmt: skip
    lo, hi, extrapolation = _interval_factors(c, cal, catalogue)
    mfu = model_flops * tokens_per_s / peak_total
    hfu = hardware_flops * tokens_per_s / peak_total
    return {
        "dp": c.plan.dp,
        "grad_accum": c.plan.grad_accum,
        "edp": c.plan.edp,
        "step_time_s": step,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": tokens_per_s / c.plan.num_gpus,
        "mfu": mfu,
        "hfu": hfu,
        "compute_s": t.compute_s,
        "comm_s": t.comm_s,
        "allgather_s": t.allgather_s,
        "reducescatter_s": t.reducescatter_s,
        "allreduce_s": t.allreduce_s,
        "p2p_s": t.p2p_s,
        "straggler_s": t.straggler_s,
        "alltoall_s": t.alltoall_s,
        "exposed_comm_s": t.exposed_comm_s,
        "exposed_alltoall_s": t.exposed_alltoall_s,
        "exposed_comm_frac": t.exposed_comm_s / step,
        "bubble_s": t.bubble_s,
        "host_stall_s": t.host_stall_s,
        "mem_gib_per_gpu": memory / _GIB,
        "fits_memory": memory <= MEMORY_REJECT_FRACTION * c.system.hbm_bytes,
        "power_w_per_gpu": power,
        "energy_j_per_token": power * c.plan.num_gpus / tokens_per_s,
        "tokens_per_s_per_gpu_lo": tokens_per_s / c.plan.num_gpus * lo,
        "tokens_per_s_per_gpu_hi": tokens_per_s / c.plan.num_gpus * hi,
        "step_time_s_lo": step / hi,
        "step_time_s_hi": step / lo,
        "extrapolation": _memory_flags(
            _utilisation_flags(extrapolation, mfu, hfu),
            memory / c.system.hbm_bytes,
            cal.memory_usable_fraction,
        ),
    }


def _utilisation_flags(extrapolation: pd.Series, mfu: np.ndarray, hfu: np.ndarray) -> pd.Series:
    """``extrapolation`` with ``mfu:X>1`` / ``hfu:X>1`` appended where the (non-causal) FLOP
    convention puts MFU or HFU above 1 (module docstring); untouched elsewhere."""
    with np.errstate(invalid="ignore"):
        above = np.flatnonzero((mfu > 1) | (hfu > 1))
    if not len(above):
        return extrapolation
    out = extrapolation.astype(object).to_numpy(copy=True)
    for i in above:
        flags = [f"{name}:{value:.3g}>1" for name, value in (("mfu", mfu[i]), ("hfu", hfu[i]))
                 if value > 1]  # fmt: skip
        out[i] = ";".join([*([out[i]] if out[i] else []), *flags])
    return pd.Series(pd.array(out, dtype=extrapolation.dtype), index=extrapolation.index)


def _memory_flags(extrapolation: pd.Series, ratio: np.ndarray, usable: float) -> pd.Series:
    """``extrapolation`` with ``memory:R>U`` appended where the predicted bytes over HBM ``R``
    exceed the usable fraction ``U`` but not :data:`MEMORY_REJECT_FRACTION`
    (:mod:`trainscale.sim.memory_margin`); these flags do not widen the interval."""
    flagged = np.flatnonzero((ratio > usable) & (ratio <= MEMORY_REJECT_FRACTION))
    if not len(flagged):
        return extrapolation
    out = extrapolation.astype(object).to_numpy(copy=True)
    for i in flagged:
        out[i] = ";".join([*([out[i]] if out[i] else []), f"memory:{ratio[i]:.3g}>{usable:g}"])
    return pd.Series(pd.array(out, dtype=extrapolation.dtype), index=extrapolation.index)


#: Metric columns that must be finite and not negative in every returned row.
_NOT_NEGATIVE = (
    "compute_s", "comm_s", "allgather_s", "reducescatter_s", "allreduce_s", "p2p_s",
    "straggler_s", "alltoall_s", "exposed_alltoall_s", "exposed_comm_s", "exposed_comm_frac",
    "bubble_s", "host_stall_s", "power_w_per_gpu", "mfu", "hfu",
)  # fmt: skip
#: Metric columns that must be finite and positive.
_POSITIVE = (
    "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mem_gib_per_gpu",
    "energy_j_per_token",
)  # fmt: skip
_INTERVAL = ("tokens_per_s_per_gpu_lo", "tokens_per_s_per_gpu_hi", "step_time_s_lo",
             "step_time_s_hi")  # fmt: skip


def output_problems(
    out: dict[str, np.ndarray], c: Configs, *, intervals: bool
) -> list[tuple[int, str, str]]:
    """``(row, column, message)`` for every predicted value no GPU can produce: NaN or infinite,
    negative time, memory, power or utilisation, a zero step time, throughput or memory, an
    interval end missing although the calibration has intervals, and an executed utilisation
    above 1 (HFU with attention under the causal mask); one per row, its first failing column
    (step time, throughput, memory and energy first: a NaN there spreads to the others).
    ``out`` is :func:`predict_arrays`'s result for ``c``; rows are positions in ``c``. Empty for
    every valid configuration: a problem here is a simulator bug or an input outside what it
    models."""
    problems: list[tuple[int, str, str]] = []

    def refuse(mask: np.ndarray, name: str, what: str) -> None:
        for row in np.flatnonzero(mask):
            value = out[name][row]
            problems.append((int(row), name, f"the simulator predicted {value:.6g} ({what}): "
                             "no GPU can do this; please report the configuration"))  # fmt: skip

    with np.errstate(invalid="ignore"):
        for name in _POSITIVE:
            values = np.asarray(out[name], dtype=np.float64)
            refuse(~(np.isfinite(values) & (values > 0)), name, "not a finite number > 0")
        for name in _NOT_NEGATIVE:
            values = np.asarray(out[name], dtype=np.float64)
            refuse(~(np.isfinite(values) & (values >= 0)), name, "not a finite number >= 0")
        for name in _INTERVAL if intervals else ():
            values = np.asarray(out[name], dtype=np.float64)
            refuse(~(np.isfinite(values) & (values > 0)), name, "not a finite number > 0")
        executed = out["hfu"] - _causal_share(c) * np.asarray(out["tokens_per_s"]) / (
            c.plan.num_gpus * c.system.peak_flops_per_s
        )
        refuse(executed > 1 + 1e-9, "hfu", "above the GPUs' peak even with attention counted "
               "under the causal mask")  # fmt: skip
    first: dict[int, tuple[int, str, str]] = {}
    for problem in problems:  # one problem per row: the first column that fails
        first.setdefault(problem[0], problem)
    return sorted(first.values())


def _causal_share(c: Configs) -> np.ndarray:
    """The attention FLOPs per token the convention counts but a causal kernel skips (half of
    ``12·layers·hidden·seq_len``, and of the recomputed ``4·layers·hidden·seq_len``)."""
    attention = 12.0 + 4.0 * (c.plan.recompute > 0)
    return 0.5 * attention * c.model.layers * c.model.hidden.astype(np.float64) * c.plan.seq_len


def _interval_factors(
    c: Configs, cal: Calibration, catalogue: Catalogue
) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """``exp(-q·sigma)`` and ``exp(+q·sigma)`` per configuration: the 80 % interval of
    tokens/s per GPU as factors of the prediction (:mod:`trainscale.sim.intervals`), widened by
    the out-of-support flags, and the ``extrapolation`` column (:mod:`trainscale.sim.support`);
    NaN and empty flags when the calibration has no ``intervals`` block."""
    if cal.intervals is None:
        nan = np.full(len(c), np.nan)
        return nan, nan, _strings(np.zeros(len(c), np.int32), ("",))
    keys = (catalogue.gpu_keys, catalogue.framework_keys)
    dense = _factors_under(cal.intervals, c, *keys)
    moe = c.model.num_experts > 0
    if cal.moe_intervals is None or not moe.any():
        return dense
    # mixture-of-experts rows: the intervals and coverage facts of the MoE rows
    # (trainscale.calibrate.moe), so a GPU or framework no MoE row ran is flagged
    experts = _factors_under(cal.moe_intervals, c, *keys)
    text = pd.Series(np.where(moe, experts[2].to_numpy(object), dense[2].to_numpy(object)))
    return (np.where(moe, experts[0], dense[0]), np.where(moe, experts[1], dense[1]),
            text.astype(dense[2].dtype))  # fmt: skip


def _factors_under(
    intervals: PredictionIntervals,
    c: Configs,
    gpu_keys: tuple[str, ...],
    framework_keys: tuple[str, ...],
) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """:func:`_interval_factors` under one set of intervals and their coverage facts."""
    flags = support(
        intervals.facts, gpu=c.system.gpu_index, gpu_keys=gpu_keys, framework=c.stack.framework,
        framework_keys=framework_keys, sharding=c.plan.sharding, num_gpus=c.plan.num_gpus,
        params_b=np.where(
            c.model.block_params > 0, c.model.block_params / 1e9,
            block_params_b(c.model.layers, c.model.hidden, c.model.heads, c.model.kv_heads,
                           c.model.ffn, c.model.swiglu),
        ),
        seq_len=c.plan.seq_len, degrees={"tp": c.plan.tp, "pp": c.plan.pp, "cp": c.plan.cp},
    )  # fmt: skip
    lower, upper = intervals.log_factors(
        c.stack.framework, c.plan.num_gpus, c.system.gpu_index, gpu_keys, flags.widening,
        framework_keys=framework_keys,
    )  # fmt: skip
    return np.exp(lower), np.exp(upper), flags.extrapolation


def _strings(codes: np.ndarray, categories: tuple[str, ...] | list[str]) -> pd.Series:
    """A pandas ``str`` column from category codes, built by Arrow (several times faster than
    from an object array of Python strings)."""
    arrow = pa.DictionaryArray.from_arrays(
        pa.array(np.asarray(codes, dtype=np.int32)), pa.array(list(categories), pa.large_string())
    ).cast(pa.large_string())
    return pd.Series(pd.array(arrow, dtype=pd.StringDtype("pyarrow", na_value=np.nan)))


#: The configuration columns the output takes as resolved (where the input lacks them, or, for
#: :data:`_EFFECTIVE`, always): :func:`trainscale.sim.resolved.resolved_columns` gives them.
_RESOLVED = (
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "gpus_per_node",
    "nic_gbit_per_s_per_gpu", "power_limit_w", "cp", "vpp", "ep", "etp", "sharding", "recompute",
    "precision", "sequence_parallel", "system", "framework", "overlap_grad_reduce",
    "overlap_param_gather", "tp_comm_overlap", "fused_kernels", "shard_granularity",
    "attention_kernel", "fp8_recipe", "repeat_kv", "cp_comm_type",
)  # fmt: skip


#: Columns written as the simulator resolved them even when the input had them: the framework's
#: effective behaviours (an empty override means the profile's value, which the output shows),
#: the effective power limit (empty: the GPU's TDP) and the categorical columns in their
#: catalogue spelling (``FSDP`` and ``Selective`` are read case-insensitively and written back
#: as ``fsdp`` and ``selective``, so that a group-by on the output sees one value).
_EFFECTIVE = (
    "sharding", "recompute", "precision", "mlp", "system", "framework", "overlap_grad_reduce",
    "overlap_param_gather", "tp_comm_overlap", "fused_kernels", "shard_granularity",
    "attention_kernel", "fp8_recipe", "repeat_kv", "cp_comm_type", "power_limit_w",
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
    """The caller's catalogue and calibration; the shipped one for either not given (the
    shipped calibration with the offsets of the catalogue's frameworks, priors for any it
    lacks)."""
    catalogue = catalogue if catalogue is not None else load_catalogue()
    if calibration is None:
        calibration = load_calibration(frameworks=catalogue.framework_keys)
    return catalogue, calibration


def _assemble(
    frame: pd.DataFrame,
    valid: np.ndarray,
    c: Configs,
    cal: Calibration,
    catalogue: Catalogue,
    *,
    origin: str,
    skip_invalid: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The result table of the valid rows, after the output checks (:func:`output_problems`),
    and the rejects of rows that failed them (``frame``'s columns plus ``row``, ``column``,
    ``reason``; ``row`` a position in ``frame``). Without ``skip_invalid`` a failed check raises
    :class:`~trainscale.errors.ConfigurationError`."""
    metrics = predict_arrays(c, cal, catalogue)
    problems = [(int(valid[r]), name, text) for r, name, text in
                output_problems(metrics, c, intervals=cal.intervals is not None)]  # fmt: skip
    if problems and not skip_invalid:
        raise ConfigurationError(problems, origin=origin)
    failed = pd.DataFrame(columns=[*frame.columns, *names(REJECT_COLUMNS)])
    if problems:
        failed = frame.iloc[[row for row, _, _ in problems]].reset_index(drop=True).assign(
            row=[row for row, _, _ in problems], column=[name for _, name, _ in problems],
            reason=[text for _, _, text in problems],
        )  # fmt: skip
        keep = ~np.isin(valid, [row for row, _, _ in problems])
        c, valid = c.take(keep), valid[keep]
        metrics = {
            name: values[keep]
            if isinstance(values, np.ndarray)
            else values[keep].reset_index(drop=True)  # type: ignore[index]
            for name, values in metrics.items()
        }
    rows = frame.iloc[valid].reset_index(drop=True)
    # One dict, one DataFrame: a replaced column keeps its place, as ``out[name] = …`` would, at a
    # fraction of the cost of inserting fifty columns one by one.
    columns: dict[str, object] = {name: rows[name] for name in rows.columns}
    resolved = resolved_columns(
        c, _RESOLVED, framework_keys=catalogue.framework_keys, strings=_strings
    )
    for column in CONFIGURATION_COLUMNS:
        if column.name in resolved and (column.name not in columns or column.name in _EFFECTIVE):
            columns[column.name] = resolved[column.name]
    for name in _ECHO_DEFAULT:
        if name in rows.columns:
            columns[name] = _echo_default(rows[name], resolved[name], zero=name in _ZERO_DEFAULT)
    columns.update(metrics)
    result = pd.DataFrame(columns, copy=False).assign(
        source="sim", simulator_version=__version__, calibration_id=cal.calibration_id
    )
    return result, failed


#: Optional number columns whose empty cells take a default that the output shows as used: the
#: GPU's catalogue system, ``cp``, ``vpp`` and ``ep`` 1, ``etp`` the row's ``tp``. (The shape
#: columns of a row naming a ``model`` stay empty: empty means "the model's", and the model is in
#: the row.)
_ECHO_DEFAULT = ("gpus_per_node", "nic_gbit_per_s_per_gpu", "cp", "vpp", "ep", "etp")
#: Of those, the ones where 0, as empty, means "the default" (the GPU's catalogue system).
_ZERO_DEFAULT = ("gpus_per_node", "nic_gbit_per_s_per_gpu")


def _echo_default(given: pd.Series, used: object, *, zero: bool) -> object:
    """An input column as the output shows it: ``given`` where the row set the value, the value
    ``used`` where it was empty (or 0, for ``zero`` columns) and so took its default (the
    model's shape, ``cp`` 1, the GPU's system ...); ``given`` itself, dtype and all, where no
    cell took a default, so that a complete table comes out as it went in (numbers only)."""
    numbers = pd.to_numeric(given, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    missing = np.isnan(numbers) | ((numbers == 0) if zero else False)
    if not missing.any():
        return given
    used = np.asarray(used)
    return np.where(missing, used, numbers).astype(used.dtype)


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
    frame = configurations.reset_index(drop=True)
    result, failed = _assemble(
        frame, valid, configs, cal, catalogue, origin=origin, skip_invalid=True
    )
    if len(failed):
        rejects = (
            failed
            if not len(rejects)
            else pd.concat([rejects, failed], ignore_index=True).sort_values(
                "row", kind="stable", ignore_index=True
            )
        )
    return result, rejects


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
        Listing every invalid row, its column and the allowed values; or every row whose
        prediction fails the output checks (:func:`output_problems`).
    """
    catalogue, cal = _given_or_shipped(catalogue, calibration)
    configs, valid, _ = _configs(configurations, catalogue, origin=origin)
    frame = configurations.reset_index(drop=True)
    return _assemble(frame, valid, configs, cal, catalogue, origin=origin)[0]
