"""Published mixture-of-experts runs -> throughput rows the simulator predicts.

Two files hold them:

- ``data/published/moe-measurements.csv`` (its ``moe-README.md`` beside it): one published MoE
  training run per row, with the MoE shape, the whole mapping (``tp pp ep etp cp vpp dp``), the
  routing and dispatcher, the metric as printed and the tokens/s per GPU the collector derived
  from it (``measured_tokens_per_s_per_gpu``). The per-source rules (which FLOPs per token an MFU
  or TFLOP/s figure was computed with, the peak an MFU is a fraction of, the citation a row
  counts under) are in ``moe-sources.yaml`` beside it (:func:`load_moe_sources`).
- the MoE rows of ``data/published/measurements.csv`` (the Megatron-Bridge performance summary),
  normalised like its dense rows (:mod:`trainscale.published.normalise`) and completed here with
  the expert-parallel degree and routing their notes print (:func:`moe_columns_from_notes`).

:func:`load_moe_measurements` returns the same frame as the dense published throughput rows
(:attr:`trainscale.published.measurements.PublishedData.throughput`: configuration columns,
provenance, ``published_metric``, ``published_value``, ``flop_convention``, ``assumptions``,
``observed_tokens_per_s_per_gpu``) plus the MoE plan columns of :data:`MOE_PLAN_COLUMNS` and
``data_file``. The observed tokens/s per GPU is derived here again from the printed metric
(:func:`observed_moe_tokens_per_s_per_gpu`) and must agree with the file's own derivation within
:data:`DERIVATION_TOLERANCE`; a row that does not, or whose shape differs from the catalogue
model it names, or whose mapping does not multiply out to its GPU count, is an error naming the
file, the row and the column (never a silently different configuration).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.io.yaml import load_yaml
from trainscale.published import matching
from trainscale.published.normalise import BEHAVIOUR_OVERRIDES
from trainscale.schema import SHARDINGS
from trainscale.sim.model.counts import model_flops_per_token

if TYPE_CHECKING:
    from trainscale.published.normalise import Row
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "DERIVATION_TOLERANCE",
    "MOE_PLAN_COLUMNS",
    "MoESource",
    "bridge_row",
    "catalogue_model",
    "load_moe_measurements",
    "load_moe_sources",
    "moe_columns_from_notes",
    "observed_moe_tokens_per_s_per_gpu",
    "routing",
]

#: The plan columns an MoE row adds to a dense throughput row.
MOE_PLAN_COLUMNS = (
    "ep", "etp", "moe_routing", "capacity_factor", "moe_dispatcher", "moe_a2a_overlap",
)  # fmt: skip
#: Largest relative difference allowed between the tokens/s per GPU derived here and the file's
#: own ``measured_tokens_per_s_per_gpu`` (the file rounds to 0.1 tokens/s; the MFU rows' peak and
#: FLOP counts agree to 4 digits).
DERIVATION_TOLERANCE = 0.01
#: Columns of ``moe-measurements.csv`` read.
REQUIRED = (
    "source", "table_or_figure", "url", "model", "layers", "hidden", "heads", "kv_heads",
    "moe_layers", "num_experts", "experts_per_token", "shared_experts", "expert_ffn", "vocab",
    "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "gpus_per_node",
    "nic_gbit_per_s_per_gpu", "tp", "pp", "ep", "etp", "cp", "vpp", "dp", "sharding", "recompute",
    "precision", "token_dispatcher", "capacity_factor", "framework", "metric", "value",
    "measured_tokens_per_s_per_gpu", "notes",
)  # fmt: skip
_METRICS = ("mfu", "tflops_per_gpu", "step_time_s", "tokens_per_s_per_gpu")
_DISPATCHERS = ("alltoall", "allgather", "deepep")
_CONVENTIONS = ("model", "causal")
#: How a source's blank ``vpp`` is read (``unstated_vpp`` of ``moe-sources.yaml``): ``none``, no
#: interleaving (Megatron-Core's default, vpp 1); ``one_layer_per_stage``, interleaved 1F1B with
#: one transformer layer per virtual stage (vpp = layers / pp where pp > 1 divides the layers).
_UNSTATED_VPP = ("none", "one_layer_per_stage")


@dataclass(frozen=True, slots=True)
class MoESource:
    """One entry of ``moe-sources.yaml`` (see that file's header)."""

    match: str
    citation: str
    flop_conventions: Mapping[str, str]
    mfu_peak_tflops: float | None
    assumptions: str
    unstated_vpp: str = "none"


def load_moe_sources(path: Path) -> tuple[MoESource, ...]:
    """Read ``moe-sources.yaml``; errors name the file and the entry."""
    data = load_yaml(path)
    entries = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputFileError(path, "expected a non-empty list 'sources'")
    out = []
    for i, entry in enumerate(entries):
        where = f"sources[{i}]"
        if not isinstance(entry, dict) or not {"match", "citation"} <= set(entry):
            raise InputFileError(path, f"{where}: needs 'match' and 'citation'")
        conventions = entry.get("flop_conventions") or {}
        bad = {k: v for k, v in conventions.items() if k not in _METRICS or v not in _CONVENTIONS}
        if bad:
            raise InputFileError(
                path, f"{where}.flop_conventions: {bad} not allowed; metrics "
                f"{', '.join(_METRICS[:2])} map to one of {', '.join(_CONVENTIONS)}",
            )  # fmt: skip
        peak = entry.get("mfu_peak_tflops")
        if peak is not None and not (isinstance(peak, int | float) and peak > 0):
            raise InputFileError(path, f"{where}.mfu_peak_tflops: expected a positive number")
        unstated_vpp = entry.get("unstated_vpp", "none")
        if unstated_vpp not in _UNSTATED_VPP:
            raise InputFileError(path, f"{where}.unstated_vpp: {unstated_vpp!r} not allowed; "
                                 f"one of {', '.join(_UNSTATED_VPP)}")  # fmt: skip
        out.append(MoESource(str(entry["match"]), str(entry["citation"]), dict(conventions),
                             None if peak is None else float(peak),
                             str(entry.get("assumptions", "")), str(unstated_vpp)))  # fmt: skip
    return tuple(out)


def catalogue_model(text: str, models: Mapping[str, ModelShape]) -> str | None:
    """The catalogue key one of whose ``aliases`` is the model name with any trailing
    parenthetical (``(dropless)``, ``(Llama3-70B upcycled to 8 experts)``) removed, or None."""
    name = re.sub(r"\s*\(.*\)\s*$", "", text or "").strip()
    return next((key for key, shape in models.items() if name in shape.aliases), None)


def routing(text: str) -> tuple[str, float] | None:
    """``(moe_routing, capacity_factor)`` of a routing description, or None where it is not one.

    A leading number is a token-drop capacity factor (``capacity``); "forced balance" or
    "force-balanced" is uniform routing forced by the benchmark (``balanced``, Megatron's
    ``--moe-router-force-load-balancing``, torchtitan's ``moe_force_load_balance``); otherwise
    "dropless" is a trained router without dropping (``dropless``). The capacity factor of the
    two others is NaN (not used)."""
    lower = (text or "").strip().lower()
    if (factor := re.match(r"(\d+(?:\.\d+)?)\b", lower)) is not None:
        return "capacity", float(factor.group(1))
    if re.search(r"forced? ?-?balanc", lower):
        return "balanced", float("nan")
    if lower.startswith("dropless"):
        return "dropless", float("nan")
    return None


def moe_columns_from_notes(notes: str) -> tuple[dict[str, object], list[str]]:
    """The MoE plan columns the Megatron-Bridge performance summary prints in a row's notes (its
    ``EP`` and the routing footnote), and the assumptions made; the dispatcher is not printed
    (the framework profile's default). Raises ValueError naming what is missing."""
    ep = re.search(r"\bEP (\d+)", notes)
    if ep is None:
        raise ValueError("an MoE row without an 'EP n' entry in its notes")
    columns: dict[str, object] = {
        "ep": int(ep.group(1)),
        "etp": 1,
        "moe_dispatcher": None,
        "moe_a2a_overlap": None,
    }
    assumptions = [
        "expert tensor parallelism not printed: etp 1, the only value the table's Qwen3-235B "
        "mapping (tp 2, ep 32, pp 8 on 256 GPUs: pp·ep·etp divides the GPUs) admits, taken for "
        "every MoE row of the table",
        "token dispatcher not printed: the framework profile's default",
    ]
    if re.search(r"tokendrop", notes):
        columns.update(moe_routing="capacity", capacity_factor=1.0)
        assumptions.append(
            "tokendrop run: capacity factor 1.0 (not printed; Megatron-Core's "
            "--moe-expert-capacity-factor as the ModelZoo's token-drop recipes)"
        )
    elif re.search(r"force-balance", notes):
        columns.update(moe_routing="balanced", capacity_factor=float("nan"))
    else:
        raise ValueError("an MoE row whose notes state neither forced balance nor token drop")
    return columns, assumptions


class _Bad(ValueError):
    """One bad cell: ``(column, message)``."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column


def _int(record: Mapping[str, str], column: str, *, default: int | None = None) -> int:
    text = record[column].strip()
    if not text and default is not None:
        return default
    # moe_layers reads "all 56", shared_experts "1 (width 20480)": the first number counts
    pattern = {"moe_layers": r"(?:all )?(\d+)\b", "shared_experts": r"(\d+)\b"}.get(
        column, r"(\d+)(?:\.0*)?$"
    )
    found = re.match(pattern, text.replace(",", ""))
    if found is None:
        raise _Bad(column, f"{text!r} is not a whole number")
    return int(found.group(1))


def _number(record: Mapping[str, str], column: str) -> float:
    try:
        value = float(record[column].replace(",", ""))
    except ValueError:
        raise _Bad(column, f"{record[column]!r} is not a number") from None
    if not np.isfinite(value) or value <= 0:
        raise _Bad(column, f"{record[column]!r} is not a positive number")
    return value


def _source(record: Mapping[str, str], sources: Sequence[MoESource]) -> MoESource:
    found = [s for s in sources if s.match in record["source"]]
    if len(found) != 1:
        raise _Bad("source", f"{record['source'][:80]!r} matches {len(found)} entries of "
                   f"moe-sources.yaml (need exactly one; matches: "
                   f"{', '.join(repr(s.match) for s in sources)})")  # fmt: skip
    return found[0]


def _check_shape(record: Mapping[str, str], shape: ModelShape) -> None:
    """The row's printed shape against its catalogue model's."""
    moe = shape.moe
    assert moe is not None
    expected = {
        "layers": shape.layers, "hidden": shape.hidden, "heads": shape.heads,
        "kv_heads": shape.kv_heads, "num_experts": moe.num_experts,
        "experts_per_token": moe.experts_per_token, "expert_ffn": moe.expert_ffn,
        "shared_experts": moe.shared_experts, "vocab": shape.vocab,
        "moe_layers": moe.moe_layers(shape.layers),
    }  # fmt: skip
    for column, value in expected.items():
        if _int(record, column) != value:
            raise _Bad(column, f"{record[column]!r} differs from catalogue model {shape.key}'s "
                       f"{value} (data/models.yaml)")  # fmt: skip


def _plan(record: Mapping[str, str], frameworks: Sequence[str]) -> dict[str, object]:
    """Degrees, batches and the stack of a row, checked against its GPU count."""
    plan: dict[str, object] = {
        k: _int(record, k, default=1) for k in ("tp", "pp", "ep", "cp", "vpp", "micro_batch")
    }
    plan["etp"] = _int(record, "etp", default=int(plan["tp"]))  # type: ignore[arg-type]
    num_gpus = _int(record, "num_gpus")
    tp, pp, cp = (int(plan[k]) for k in ("tp", "pp", "cp"))  # type: ignore[call-overload]
    if num_gpus % (tp * pp * cp) or _int(record, "dp") != num_gpus // (tp * pp * cp):
        raise _Bad("dp", f"{record['dp']!r} is not num_gpus / (tp·pp·cp) = {num_gpus} / "
                   f"({tp}·{pp}·{cp})")  # fmt: skip
    sharding = record["sharding"].split()[0].lower() if record["sharding"].strip() else ""
    if sharding not in SHARDINGS:
        raise _Bad("sharding", f"{record['sharding']!r}: its first word must be one of "
                   f"{', '.join(SHARDINGS)}")  # fmt: skip
    framework = record["framework"].split()[0].lower() if record["framework"].strip() else ""
    if framework not in frameworks:
        raise _Bad("framework", f"{record['framework']!r}: its first word must be one of "
                   f"{', '.join(frameworks)} (the catalogue's frameworks)")  # fmt: skip
    dispatcher = record["token_dispatcher"].split()[0].lower() if record[
        "token_dispatcher"].strip() else ""  # fmt: skip
    if dispatcher not in _DISPATCHERS:
        raise _Bad("token_dispatcher", f"{record['token_dispatcher']!r}: its first word must be "
                   f"one of {', '.join(_DISPATCHERS)}")  # fmt: skip
    routed = routing(record["capacity_factor"])
    if routed is None:
        raise _Bad("capacity_factor", f"{record['capacity_factor'][:60]!r}: expected a capacity "
                   "factor (a number), 'dropless' or a forced balance")  # fmt: skip
    # Megatron-Core's 1F1B A2A overlap (--overlap-moe-expert-parallel-comm): where a row says so;
    # else the framework profile's default
    overlap = True if "a2a overlap" in record["token_dispatcher"].lower() else None
    plan.update(num_gpus=num_gpus, sharding=sharding, framework=framework,
                moe_dispatcher=dispatcher, moe_routing=routed[0], capacity_factor=routed[1],
                moe_a2a_overlap=overlap)  # fmt: skip
    return plan


def _unstated_vpp(record: Mapping[str, str], source: MoESource, layers: int, pp: int) -> int | None:
    """The ``vpp`` a blank cell reads as under the source's ``unstated_vpp`` rule; None where the
    cell is filled or the rule keeps Megatron-Core's default (vpp 1)."""
    if record["vpp"].strip() or source.unstated_vpp != "one_layer_per_stage":
        return None
    return layers // pp if pp > 1 and layers % pp == 0 else None


def _row(
    record: Mapping[str, str], line: int, sources: Sequence[MoESource],
    hardware: HardwareCatalog, models: Mapping[str, ModelShape], frameworks: Sequence[str],
) -> dict:  # fmt: skip
    """One row of ``moe-measurements.csv`` as a throughput row (observed tokens/s not yet set)."""
    source = _source(record, sources)
    key = catalogue_model(record["model"], models)
    if key is None or models[key].moe is None:
        raise _Bad("model", f"{record['model']!r} names no mixture-of-experts model of "
                   "data/models.yaml (add its name to the model's aliases)")  # fmt: skip
    _check_shape(record, models[key])
    gpu = matching.gpu_key(record["gpu"], hardware)
    if gpu is None:
        raise _Bad("gpu", f"{record['gpu']!r} is not a GPU of data/hardware.yaml")
    plan = _plan(record, frameworks)
    pp = int(plan["pp"])  # type: ignore[call-overload]
    unstated = _unstated_vpp(record, source, models[key].layers, pp)
    if unstated is not None:
        plan["vpp"] = unstated
    metric = record["metric"].strip()
    if metric not in _METRICS:
        raise _Bad("metric", f"{metric!r}; allowed: {', '.join(_METRICS)}")
    convention = source.flop_conventions.get(metric, "direct")
    if metric in ("mfu", "tflops_per_gpu") and convention == "direct":
        raise _Bad("metric", f"{metric} but moe-sources.yaml gives source {source.match!r} no "
                   "flop_conventions entry for it")  # fmt: skip
    if metric == "mfu" and source.mfu_peak_tflops is None:
        raise _Bad("metric", f"mfu but source {source.match!r} has no mfu_peak_tflops")
    precision = matching.precision(record["precision"])
    nic = record["nic_gbit_per_s_per_gpu"].strip()
    assumed = [source.assumptions]
    if not record["micro_batch"].strip():
        assumed.append("micro-batch not stated: 1")
    if unstated is not None:
        assumed.append(
            f"virtual pipeline not stated: vpp {unstated}, one layer per virtual stage "
            f"({models[key].layers} layers / pp {plan['pp']})"
        )
    return {
        "csv_row": line, "citation": source.citation, "url": record["url"],
        "table_or_figure": record["table_or_figure"], "model_name": record["model"],
        "published_metric": metric, "model": key, "seq_len": _int(record, "seq_len"),
        "global_batch": _int(record, "global_batch"), "micro_batch": plan["micro_batch"],
        "gpu": gpu, "num_gpus": plan["num_gpus"],
        "gpus_per_node": _int(record, "gpus_per_node", default=8), "system": "",
        "nic_gbit_per_s_per_gpu": float(nic) if nic else 0.0, "power_limit_w": 0.0,
        **{k: plan[k] for k in ("tp", "pp", "cp", "vpp", "sharding")},
        "recompute": matching.recompute(record["recompute"]), "precision": precision,
        "framework": plan["framework"], "framework_text": record["framework"],
        **{k: plan[k] for k in MOE_PLAN_COLUMNS},
        "published_value": _number(record, "value"), "published_value_text": record["value"],
        "flop_convention": convention, "mfu_peak_tflops": source.mfu_peak_tflops,
        "derived_tokens_per_s_per_gpu": _number(record, "measured_tokens_per_s_per_gpu"),
        "assumptions": "; ".join(a for a in assumed if a), "data_file": "moe-measurements.csv",
    }  # fmt: skip


def observed_moe_tokens_per_s_per_gpu(
    rows: pd.DataFrame, models: Mapping[str, ModelShape]
) -> np.ndarray:
    """The published number of each MoE row as tokens/s per GPU: an MFU times the source's peak
    (``mfu_peak_tflops``), or a TFLOP/s figure, divided by the catalogue model's FLOPs per token
    in the row's ``flop_convention`` (:func:`trainscale.sim.model.counts.model_flops_per_token`,
    ``causal`` halving the attention term); a step time as global batch × sequence / step / GPUs;
    tokens/s per GPU as printed."""
    out = np.empty(len(rows))
    for i, row in enumerate(rows.itertuples(index=False)):
        value, metric = float(row.published_value), row.published_metric
        if metric in ("mfu", "tflops_per_gpu"):
            flops = model_flops_per_token(models[row.model], int(row.seq_len),
                                          causal=row.flop_convention == "causal")  # fmt: skip
            rate = value * float(row.mfu_peak_tflops) if metric == "mfu" else value
            out[i] = rate * 1e12 / flops
        elif metric == "step_time_s":
            out[i] = row.global_batch * row.seq_len / value / row.num_gpus
        else:
            out[i] = value
    return out


def load_moe_measurements(
    path: Path, *, hardware: HardwareCatalog, models: Mapping[str, ModelShape],
    frameworks: Sequence[str], sources: Path | Sequence[MoESource] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Read and normalise ``moe-measurements.csv`` (see the module docstring); ``frameworks``:
    the caller's framework list (``Catalogue.framework_keys``) a row's ``framework`` is one of;
    ``sources``: the rules (default ``moe-sources.yaml`` beside the CSV). Every bad row is
    reported at once, as :class:`~trainscale.errors.ConfigurationError` naming the file, the
    0-based data row and the column."""
    path = Path(path)
    if sources is None or isinstance(sources, Path):
        sources = load_moe_sources(sources or path.parent / "moe-sources.yaml")
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError) as error:
        raise InputFileError(path, f"cannot read it as CSV ({error})") from None
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise InputFileError(path, f"missing column(s) {', '.join(missing)}")
    if table.empty:
        raise InputFileError(path, "no row under the header")
    rows, problems = [], []
    for i, record in enumerate(table.to_dict("records")):
        try:
            rows.append(_row(record, i + 2, sources, hardware, models, frameworks))
        except _Bad as bad:
            problems.append((i, bad.column, str(bad)))
    frame = pd.DataFrame(rows)
    if not problems:
        frame["observed_tokens_per_s_per_gpu"] = observed_moe_tokens_per_s_per_gpu(frame, models)
        ratio = frame["observed_tokens_per_s_per_gpu"] / frame["derived_tokens_per_s_per_gpu"]
        for i in np.flatnonzero(np.abs(ratio.to_numpy() - 1) > DERIVATION_TOLERANCE):
            r = frame.iloc[i]
            problems.append((int(i), "measured_tokens_per_s_per_gpu", (
                f"{r['derived_tokens_per_s_per_gpu']:g} but the {r['published_metric']} "
                f"{r['published_value']:g} gives {r['observed_tokens_per_s_per_gpu']:.1f} "
                f"({r['flop_convention']} FLOPs of {r['model']}); allowed: within "
                f"{100 * DERIVATION_TOLERANCE:g} %"
            )))  # fmt: skip
    if problems:
        raise ConfigurationError(problems, origin=str(path))
    for name in BEHAVIOUR_OVERRIDES:  # the framework profile's defaults
        frame[name] = None
    return frame.drop(columns=["derived_tokens_per_s_per_gpu", "mfu_peak_tflops"])


def bridge_row(row: Row, dense: dict) -> dict:
    """An MoE row of ``measurements.csv``: its dense normalisation ``dense``
    (:func:`trainscale.published.normalise.throughput_row`) with the MoE plan columns its notes
    print (:func:`moe_columns_from_notes`); ValueError where they are not printed."""
    columns, assumed = moe_columns_from_notes(row.text("notes"))
    assumptions = "; ".join(a for a in (dense.get("assumptions", ""), *assumed) if a)
    return {**dense, **columns, "model_name": row.text("model"), "assumptions": assumptions,
            "data_file": "measurements.csv"}  # fmt: skip
