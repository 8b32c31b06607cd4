"""Published CSV rows -> throughput rows: a configuration the simulator can predict, the
published number and its FLOP convention, or a reject with its reason.

A row is read by :class:`Row` (typed accessors over the CSV text), mapped to catalogue keys with
:mod:`trainscale.published.matching`, and completed with its source's rules and assumptions from
``sources.yaml`` (:class:`~trainscale.published.sources.SourceRules`). The steps, in order:
:func:`_screen` (what no configuration can represent), :func:`_plan` (model, GPU, parallel plan,
sequence), :func:`_batches` (global and micro-batch, pipeline interleaving, with the source's
rules), :func:`_notes_rules` (values a source prints in its notes), :func:`_metric_value` (the
number in a unit the FLOP conventions convert) and :func:`behaviour_overrides`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trainscale.published import matching
from trainscale.published.sources import FrameworkPattern, SourceRules
from trainscale.sim.degrees import data_parallel_degree
from trainscale.sim.model.flops import model_flops_per_token
from trainscale.sim.model.params import TransformerShape

if TYPE_CHECKING:
    from trainscale.published.csv import ParsedValue
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "BEHAVIOUR_OVERRIDES",
    "Rejected",
    "Row",
    "behaviour_overrides",
    "flops_per_token",
    "moe_layout",
    "observed_tokens_per_s_per_gpu",
    "observed_with_shapes",
    "throughput_row",
]

#: Per-row behaviour overrides (empty/NA = the framework profile's default), with their values.
BEHAVIOUR_OVERRIDES: dict[str, tuple[object, ...]] = {
    "overlap_grad_reduce": (True, False),
    "overlap_param_gather": (True, False),
    "tp_comm_overlap": (True, False),
    "fused_kernels": (True, False),
    "shard_granularity": ("layer", "tensor"),
    "attention_kernel": ("flash2", "fused", "triton"),
    "fp8_recipe": ("delayed", "current", "tensorwise", "rowwise"),
    "repeat_kv": (True, False),
    "cp_comm_type": ("p2p", "all_gather"),
}

#: FLOP convention of each throughput metric (a source's ``flop_conventions`` rule overrides).
_CONVENTIONS = {
    "tokens_per_s_per_GPU": "direct",
    "step_time_ms": "direct",
    "achieved_TFLOPs_per_GPU": "megatron",
    "TFLOPs_per_GPU": "model",
    "aggregate_PFLOPs": "megatron",
    "weak_scaling_efficiency_pct": "megatron",
    "MFU_pct": "model",
}


class Rejected(Exception):
    """A well-formed row the simulator cannot represent; the message is the reason."""


class Row:
    """One CSV row with typed accessors."""

    def __init__(self, line: int, record: dict) -> None:
        self.line = line
        """1-based line of the CSV file the record is on (the header is line 1)."""
        self.r = record

    def text(self, key: str) -> str:
        value = self.r.get(key)
        return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)

    def integer(self, key: str) -> int | None:
        """The field as a whole number; None where empty or not one (a range, text)."""
        return _int(self.r.get(key))

    def provenance(self) -> dict:
        return {
            "csv_row": self.line,
            "citation": self.text("source"),
            "url": self.text("url"),
            "table_or_figure": self.text("table_or_figure"),
            "model_name": self.text("model"),
            "published_metric": self.text("metric"),
        }

    def reject(self, reason: str) -> dict:
        """The rejects-table row of this row."""
        return {**self.provenance(), "published_value_text": self.text("value"), "reason": reason}


def number(value: object) -> float:
    """Parse a number written as text; NaN for empty, ranges and bounds."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    try:
        return float(str(value).strip())
    except ValueError:
        return np.nan


def _int(value: object) -> int | None:
    parsed = number(value)
    if not np.isfinite(parsed) or parsed != int(parsed):
        return None
    return int(parsed)


def moe_layout(row: Row) -> str | None:
    """A description of the row's mixture-of-experts layout, or None for a dense model."""
    notes = row.text("notes")
    ep = re.search(r"\bEP (\d+)", notes)
    experts = re.search(r"(\d+)(?: routed)? experts", notes)
    if re.search(r"\bMoE\b", notes) or experts or (ep and int(ep.group(1)) > 1):
        parts = [f"{experts.group(1)} experts" if experts else "",
                 f"expert parallel {ep.group(1)}" if ep else ""]  # fmt: skip
        return ", ".join(p for p in parts if p) or "experts"
    return None


def _shape(row: Row, models: Mapping[str, ModelShape]) -> dict | None:
    """Model shape from the row's columns or, for models named by an alias, the catalogue
    ``models``."""
    if (key := matching.model_key(row.text("model"), models)) is not None:
        return {"model": key}
    fields = {name: row.integer(name) for name in ("layers", "hidden", "heads", "vocab")}
    if any(v is None for v in fields.values()):
        return None
    ffn = row.integer("ffn") or 4 * fields["hidden"]  # GPT/MPT: 4h (Narayanan's formula)
    name = row.text("model")
    kv = 8 if "llama 3" in name.lower() else fields["heads"]
    return {"model": "", **fields, "kv_heads": kv, "ffn": ffn,
            "mlp": "swiglu" if "llama" in name.lower() else "gelu"}  # fmt: skip


def _screen(row: Row, parsed: ParsedValue) -> int:
    """The row's GPU count; :class:`Rejected` for T5, bounds, ranges and no GPU count
    (every reason that applies, so a row is never rejected for half its story)."""
    if "T5" in row.text("model"):
        raise Rejected("encoder-decoder model (T5): the simulator models decoder-only transformers")
    problems = []
    if parsed.kind == "lower_bound":
        problems.append(f"value {row.text('value')!r} is a lower bound, not a measured number")
    if parsed.kind == "range":
        problems.append(f"value {row.text('value')!r} is a range, not one measured number")
    num_gpus = row.integer("num_gpus")
    if num_gpus is None and row.text("num_gpus"):
        problems.append(
            f"the source gives a range of GPU counts ({row.text('num_gpus')}), not the GPU "
            "count of one run"
        )
    elif num_gpus is None:
        problems.append("GPU count not stated by the source")
    if problems:
        raise Rejected("; ".join(problems))
    assert num_gpus is not None
    return num_gpus


@dataclass(slots=True)
class _Plan:
    """What :func:`_plan` and :func:`_batches` resolve for a throughput row."""

    framework: str
    shape: dict
    gpu: str
    sharding: str
    tp: int
    pp: int
    cp: int
    gpus_per_node: int
    seq_len: int
    dp: int
    global_batch: int | None = None
    micro: int | None = None
    vpp: int = 1


def _plan(
    row: Row,
    num_gpus: int,
    rules: SourceRules,
    catalogues: tuple[HardwareCatalog, Mapping[str, ModelShape]],
    patterns: Sequence[FrameworkPattern],
    profiles: Sequence[str],
) -> _Plan:
    """Framework, model shape, GPU, sharding, parallel degrees and sequence length (GPU and
    model wording matched to the ``catalogues``' hardware and models, framework wording to
    ``patterns``)."""
    hardware, models = catalogues
    try:
        framework = matching.framework_profile(
            row.text("framework"), row.text("sharding"), row.text("notes"), patterns=patterns,
            profiles=profiles,
        )  # fmt: skip
    except matching.FrameworkNotMapped as error:
        raise Rejected(str(error)) from error
    shape = _shape(row, models)
    if shape is None:
        raise Rejected("model shape (layers, hidden, heads) not published")
    gpu = matching.gpu_key(row.text("gpu"), hardware)
    if gpu is None:
        raise Rejected(f"GPU {row.text('gpu')!r} is not in the catalogue")
    sharding = matching.sharding(row.text("sharding"))
    if sharding is None:
        raise Rejected(f"sharding {row.text('sharding')!r} (CPU offload) is not modelled")
    tp, pp, notes = row.integer("tp"), row.integer("pp"), row.text("notes")
    if tp is None and "model-parallel size=96" in notes:
        tp, pp = 8, 12
    if tp is None and "model-parallel size=1" in notes:
        tp, pp = 1, 1
    if tp is None:
        if "TP/PP not stated" in notes:
            raise Rejected("tensor/pipeline split not stated")
        tp = 1
    pp = pp or 1
    cp = row.integer("cp") or 1
    seq_len = row.integer("seq_len") or rules.rule("seq_len_default")
    if seq_len is None:
        raise Rejected("sequence length not published")
    dp = data_parallel_degree(num_gpus, tp, pp, cp)
    if dp == 0:
        raise Rejected(f"num_gpus {num_gpus} not divisible by tp*pp*cp")
    gpn = row.integer("gpus_per_node") or 8
    return _Plan(framework, shape, gpu, sharding, tp, pp, cp, gpn, seq_len, dp,
                 row.integer("global_batch_seqs"), row.integer("micro_batch"))  # fmt: skip


def _batches(row: Row, plan: _Plan, rules: SourceRules) -> None:
    """Global batch, micro-batch and interleaving with the source's rules (in place)."""
    notes = row.text("notes")
    if (micro := rules.rule("micro_batch")) is not None:
        plan.micro = micro
    plan.vpp = rules.rule("vpp", 1)
    if (pattern := rules.rule("global_batch_per_dp_from_notes")) is not None:
        per_dp = re.search(pattern, notes)
        plan.global_batch = plan.dp * int(per_dp.group(1)) if per_dp else plan.global_batch
    if rules.rule("pipeline_splits_local_batch") and plan.pp > 1:
        # e.g. torchtitan@9dec370 splits the local batch into as many micro-batches as
        # pipeline stages, and keeps FSDP parameters unsharded after forward (assumptions)
        local = plan.micro or 1
        if local % plan.pp:
            raise Rejected(f"local batch {local} does not split into {plan.pp} micro-batches")
        plan.micro = local // plan.pp
        if plan.sharding == "fsdp":
            plan.sharding = "zero2"
        plan.global_batch = local * plan.dp
        plan.vpp = 2 if "Interleaved" in notes else 1
    if rules.rule("global_batch_from_micro_batch"):
        plan.global_batch = plan.global_batch or (plan.micro or 1) * plan.dp
    if (default := rules.rule("global_batch_default")) is not None:
        plan.global_batch = plan.global_batch or default
    if rules.rule("micro_batch_from_global_batch"):
        plan.micro = plan.global_batch // plan.dp


def _notes_rules(row: Row, plan: _Plan, rules: SourceRules) -> tuple[str, list[str]]:
    """Values the source prints in its notes (virtual pipeline size, gradient accumulation)
    and a precision the source leaves out: the precision and the assumptions made."""
    notes, extra = row.text("notes"), []
    precision = matching.precision(row.text("precision"))
    if (pattern := rules.rule("vpp_from_notes")) is not None:
        vp = re.search(pattern, notes)
        if vp is None:
            raise Rejected(f"{rules.match} row without a 'VP' entry in notes")
        plan.vpp = 1 if vp.group(1) == "n/a" else int(vp.group(1))
    if (pattern := rules.rule("grad_accum_from_notes")) is not None:
        ga = re.search(pattern, notes)
        gb = plan.global_batch
        derived = gb // ((plan.micro or 1) * plan.dp) if gb else None
        if ga and derived is not None and int(ga.group(1)) != derived:
            extra.append(f"printed GA {ga.group(1)} differs from GBS/(MBS x dp) = {derived}: "
                         "GBS and MBS used")  # fmt: skip
    missing = rules.rule("precision_not_printed")
    if missing is not None and not row.text("precision"):
        if missing["notes_has"] not in notes:
            raise Rejected("precision not printed")
        precision = missing["precision"]
        extra.append(missing["assumption"])
    return precision, extra


def _metric_value(row: Row, value: float, num_gpus: int, rules: SourceRules) -> tuple[float, str]:
    """The published number in the unit of its FLOP convention, and that convention."""
    metric = row.text("metric")
    conventions = {**_CONVENTIONS, **rules.rule("flop_conventions", {})}
    if metric not in conventions:
        raise Rejected(f"metric {metric!r} is not a throughput or step-time figure")
    if metric == "aggregate_PFLOPs":
        value = value * 1e3 / num_gpus  # → TFLOP/s per GPU
    if metric == "weak_scaling_efficiency_pct":
        baseline = rules.rule("weak_scaling_baseline_tflops_per_gpu")
        if baseline is None:
            raise Rejected("weak-scaling efficiency without a published single-GPU baseline")
        value = value / 100.0 * baseline  # the published single-GPU baseline, TFLOP/s
    if metric == "MFU_pct":
        raise Rejected("MFU without a configuration the simulator can reproduce")
    return value, conventions[metric]


def _holds(when: Mapping[str, Any], row: Row, text: str) -> bool:
    framework = row.text("framework").lower()
    checks = {
        "framework_has": lambda v: v.lower() in framework,
        "framework_lacks": lambda v: v.lower() not in framework,
        "text_has": lambda v: v.lower() in text,
        "precision_is": lambda v: row.text("precision").upper() == v.upper(),
        "min_degree": lambda v: all((row.integer(k) or 1) >= n for k, n in v.items()),
    }
    return all(checks[name](value) for name, value in when.items())


def behaviour_overrides(row: Row, rules: SourceRules) -> tuple[dict[str, object], list[str]]:
    """Overrides a row's source documents (its ``behaviours`` in ``sources.yaml``, then the
    Megatron flags printed in the framework text), with the citations for the assumptions."""
    text = " ".join(row.text(k) for k in ("framework", "precision", "notes", "model")).lower()
    out: dict[str, object] = {}
    cited: list[str] = []
    for behaviour in rules.behaviours:
        if not _holds(behaviour.when, row, text):
            continue
        out.update(behaviour.values)
        out.update({k: v.lower() in text for k, v in behaviour.from_text.items()})
        if behaviour.cite:
            cited.append(behaviour.cite)
    for flag in ("overlap-grad-reduce", "overlap-param-gather", "tp-comm-overlap"):
        if flag in row.text("framework"):
            out[flag.replace("-", "_")] = True
    return out, cited


def throughput_row(
    row: Row,
    parsed: ParsedValue,
    rules: SourceRules,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    *,
    patterns: Sequence[FrameworkPattern],
    profiles: Sequence[str] = (),
) -> dict:
    """The throughput row of a CSV row (columns of
    :attr:`trainscale.published.measurements.PublishedData.throughput` but the observed
    tokens/s); :class:`Rejected` with the reason where it cannot be represented. GPU and model
    names are matched to the catalogues ``hardware`` and ``models`` (their ``aliases``), framework
    text to ``patterns`` (``sources.yaml``'s ``frameworks``; ``profiles``: the framework list,
    named when no pattern matches)."""
    num_gpus = _screen(row, parsed)
    plan = _plan(row, num_gpus, rules, (hardware, models), patterns, profiles)
    _batches(row, plan, rules)
    precision, extra = _notes_rules(row, plan, rules)
    if plan.micro is None:
        plan.micro = 1
    if plan.global_batch is None:
        raise Rejected("global batch not published")
    value, convention = _metric_value(row, parsed.number, num_gpus, rules)
    nic = matching.nic_gbit_per_s_per_gpu(row.text("inter_node"), plan.gpus_per_node)
    overrides, cited = behaviour_overrides(row, rules)
    if parsed.kind == "approximate":
        extra.append(f"value {row.text('value')!r} is approximate as printed: {value:g} used")
    return {
        **row.provenance(), **plan.shape, "seq_len": plan.seq_len,
        "global_batch": plan.global_batch, "micro_batch": plan.micro, "gpu": plan.gpu,
        "num_gpus": num_gpus, "gpus_per_node": plan.gpus_per_node,
        "system": rules.rule("system", ""),
        "nic_gbit_per_s_per_gpu": nic if nic is not None else 0.0,
        "power_limit_w": matching.power_limit_w(row.text("gpu")),
        "tp": plan.tp, "pp": plan.pp, "cp": plan.cp, "vpp": plan.vpp, "sharding": plan.sharding,
        "recompute": rules.rule("recompute") or matching.recompute(row.text("recompute")),
        "precision": precision, "framework": plan.framework,
        "framework_text": row.text("framework"),
        **{name: overrides.get(name) for name in BEHAVIOUR_OVERRIDES},
        "published_value": value, "published_value_text": row.text("value"),
        "flop_convention": convention,
        "assumptions": "; ".join(a for a in (rules.assumptions, *extra, *cited) if a),
    }  # fmt: skip


def flops_per_token(convention: str, configs: pd.DataFrame) -> np.ndarray:
    """FLOPs per token under a source's convention, for rows with resolved shape columns.

    - ``model``: trainscale's MFU convention (:mod:`trainscale.sim.model.flops`), used by Llama 3
      and torchtitan;
    - ``megatron``: Narayanan et al. eq. (3) per token, ``96·l·h²·(1 + s/(6h) + V/(16·l·h))``,
      which counts the recomputed forward pass (also Shoeybi et al., appendix A).
    """
    l = configs["layers"].to_numpy(np.float64)  # noqa: E741
    h = configs["hidden"].to_numpy(np.float64)
    s = configs["seq_len"].to_numpy(np.float64)
    v = configs["vocab"].to_numpy(np.float64)
    if convention == "megatron":
        return 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
    if convention == "model":
        shape = TransformerShape(
            l, h, configs["heads"].to_numpy(np.float64), configs["kv_heads"].to_numpy(np.float64),
            configs["ffn"].to_numpy(np.float64), v, configs["mlp"].to_numpy() == "swiglu",
        )  # fmt: skip
        return model_flops_per_token(shape, s)
    raise ValueError(f"unknown FLOP convention {convention!r}")


def observed_tokens_per_s_per_gpu(throughput: pd.DataFrame) -> np.ndarray:
    """The published number of each throughput row as tokens/s per GPU."""
    value = throughput["published_value"].to_numpy(np.float64)
    metric = throughput["published_metric"].to_numpy()
    out = np.full(len(throughput), np.nan)
    for convention in ("model", "megatron"):
        rows = throughput["flop_convention"].to_numpy() == convention
        if rows.any():
            flops = flops_per_token(convention, throughput.loc[rows])
            out[rows] = value[rows] * 1e12 / flops
    direct = metric == "tokens_per_s_per_GPU"
    out[direct] = value[direct]
    step = metric == "step_time_ms"
    tokens = throughput["global_batch"].to_numpy(np.float64) * throughput["seq_len"].to_numpy(
        np.float64
    )
    out[step] = (
        tokens[step] / (value[step] / 1e3) / throughput["num_gpus"].to_numpy(np.float64)[step]
    )
    return out


def observed_with_shapes(throughput: pd.DataFrame, models: Mapping[str, ModelShape]) -> np.ndarray:
    """Observed tokens/s per GPU; catalogue models get their shape columns resolved first."""
    resolved = throughput.copy()
    names = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp")
    shapes = [
        models[model] if model else None for model in resolved.get("model", [None] * len(resolved))
    ]
    for name in names:
        own = resolved[name].tolist() if name in resolved else [None] * len(resolved)
        resolved[name] = [
            own[i] if shape is None else getattr(shape, name) for i, shape in enumerate(shapes)
        ]
    return observed_tokens_per_s_per_gpu(resolved)
