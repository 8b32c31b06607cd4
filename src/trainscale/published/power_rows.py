"""``data/published/power-measurements.csv``: metered node power and energy per token of LLM
training runs, as configurations the simulator can predict (``power-README.md`` beside it
describes every field and its tag).

Each field carries a tag after its value (``[V]`` copied, ``[D]`` derived, ``[A]`` assumed),
stripped here; a number field is the number it starts with (``16 = 512/(4*8) [D]`` is 16). A row
is **fitted and validated** when its metric is a mean node power (``node_power_w_avg``) or a node
energy per token (``energy_j_per_token``) measured on the AC side (``scope`` names AC: the model's
node power is what the node draws from the wall, PSU losses included) and it describes a decoder
LLM. Every other row goes to the rejects with its reason: the DC readings of the same runs (the AC
row is used), other statistics of the same runs (training-block means, p99, per-GPU slots, kWh
per run), the metered switch (the datum of the catalogue's ``switch_power``, so it cannot check
it), encoder models (BERT: the simulator models decoder-only transformers).

Mapping of the text fields (documented, not guessed): the GPU by the catalogue's GPU aliases; the
system by the catalogue's system aliases in ``table_or_figure`` (``SMC-H100``, ``XE9680``);
``framework`` by the framework patterns of ``data/published/sources.yaml`` (NeMo is Megatron);
``sharding`` "distributed optimizer" is ``zero1`` (Megatron's distributed optimizer shards the
optimizer state: https://docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/dist_optimizer.html);
``precision`` fp8 where the text says FP8; ``vpp`` from "virtual pipeline N" in the notes;
``sequence_parallel`` where the notes say "sequence parallel" or tensor parallelism is used with
NeMo (its default with TP > 1); the notes searched are those of every row of the same run
(source, model, GPU count); the model is the catalogue model of the same shape (layers, hidden,
heads, ffn: GPT-3 175B, Llama-2-70B), which gives what the rows leave out (vocabulary, key/value
heads, MLP type), else the row's shape with multi-head attention; ``finetune`` and
``lora_rank`` where the model text names LoRA (rank 16, power-README.md) and the columns exist.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.errors import InputFileError
from trainscale.published.matching import framework_profile, precision
from trainscale.published.sources import Sources
from trainscale.schema import CONFIGURATION_COLUMNS, names

if TYPE_CHECKING:
    from trainscale.sim.catalogue import Catalogue
    from trainscale.sim.model.shape import ModelShape

__all__ = ["FITTED_METRICS", "PowerRows", "load_power_rows"]

#: The metrics a row must have to be fitted and validated (node scope, AC).
FITTED_METRICS = ("node_power_w_avg", "energy_j_per_token")
_CONFIGURATION_NAMES = frozenset(names(CONFIGURATION_COLUMNS))
_TAG = re.compile(r"\s*\[(V|D|A)\]$")
_NUMBER = re.compile(r"^\s*([0-9][0-9,]*\.?[0-9]*)")
_REQUIRED = ("source", "url", "model", "layers", "hidden", "heads", "ffn", "seq_len",
             "global_batch_seqs", "micro_batch", "gpu", "num_gpus", "gpus_per_node", "tp", "pp",
             "metric", "value", "scope", "framework", "notes")  # fmt: skip


@dataclass(frozen=True)
class PowerRows:
    """``rows``: one configuration per fitted row (configuration columns) plus ``citation``,
    ``csv_row`` (CSV line), ``metric``, ``observed`` (W per node or J/token) and
    ``measured_tokens_per_s_per_gpu``, ``workload`` (the model text, up to its parenthesis),
    ``benchmark`` (the MLPerf benchmark the model text names, or None) and ``run_samples``
    (samples one run trained, from the run's notes; NaN where they say none);
    ``rejects``: ``csv_row``, ``citation``, ``metric``,
    ``reason``."""

    rows: pd.DataFrame
    rejects: pd.DataFrame


def _strip(text: str) -> str:
    return _TAG.sub("", text or "").strip()


def _number(text: str) -> float | None:
    match = _NUMBER.match(_strip(text))
    return float(match.group(1).replace(",", "")) if match else None


def _reason(fields: dict[str, str]) -> str | None:
    metric, scope = fields["metric"], fields["scope"]
    if re.search(r"\bBERT\b", fields["model"]):
        return "encoder model (BERT): the simulator models decoder-only transformers"
    if metric.startswith("network_switch"):
        return ("metered switch power: the datum of the catalogue's switch_power, so it cannot "
                "check it")  # fmt: skip
    if metric not in FITTED_METRICS:
        return f"{metric}: another statistic of the same runs (mean node power is fitted)"
    if not re.search(r"\bAC\b", scope):
        return "DC reading at the power shelf: the AC row of the same runs is used"
    return None


def _model(shape: dict[str, int], models: Mapping[str, ModelShape]) -> str | None:
    """The catalogue model of the row's shape (layers, hidden, heads, ffn), or None: it gives
    what the row does not (vocabulary, key/value heads, MLP type)."""
    return next((key for key, m in models.items()
                 if (m.layers, m.hidden, m.heads, m.ffn) == tuple(shape[k] for k in _SHAPE)),
                None)  # fmt: skip


_SHAPE = ("layers", "hidden", "heads", "ffn")


def _configuration(fields: dict[str, str], path: Path, line: int, catalogue: Catalogue,
                   sources: Sources) -> dict[str, object]:  # fmt: skip
    hardware = catalogue.hardware
    gpu = hardware.gpu_for_text(_strip(fields["gpu"]))
    system = hardware.system_for_text(fields["table_or_figure"])
    if gpu is None or system is None:
        what = "GPU" if gpu is None else "system"
        raise InputFileError(path, f"line {line}: no catalogue {what} matches this row "
                             "(gpu / table_or_figure)")  # fmt: skip
    notes = fields["notes"]
    tp = int(_number(fields["tp"]) or 1)
    framework = framework_profile(
        _strip(fields["framework"]), patterns=sources.frameworks, profiles=sources.profiles
    )
    vpp = re.search(r"virtual pipeline (\d+)", notes)
    values = {
        name: int(_number(fields[name]) or 0)
        for name in (*_SHAPE, "seq_len", "micro_batch", "num_gpus", "gpus_per_node", "pp")
    }
    model = _model(values, catalogue.models)
    vocab = _number(fields.get("vocab", ""))
    if model is None and not vocab:
        raise InputFileError(path, f"line {line}: no vocab, and no catalogue model has this "
                             "shape (layers, hidden, heads, ffn)")  # fmt: skip
    shape = (
        {"model": model}
        if model is not None
        else {
            **{k: values[k] for k in _SHAPE},
            "kv_heads": values["heads"],
            "vocab": int(vocab or 0),
        }
    )
    config = {
        **shape, **{k: v for k, v in values.items() if k not in _SHAPE}, "tp": tp,
        "cp": int(_number(fields.get("cp", "")) or 1), "vpp": int(vpp.group(1)) if vpp else 1,
        "global_batch": int(
            _number(fields["global_batch_seqs"]) or 0),
        "gpu": gpu, "system": system, "framework": framework,
        "sharding": "zero1" if "distributed optimizer" in fields["sharding"] else "ddp",
        "recompute": "none", "precision": precision(fields["precision"]),
        "sequence_parallel": bool("sequence parallel" in notes or (framework == "megatron"
                                                                   and tp > 1)),
    }  # fmt: skip
    if "lora" in fields["model"].lower() and "finetune" in _CONFIGURATION_NAMES:
        config |= {"finetune": "lora", "lora_rank": 16}
    return config


def _benchmark(model: str) -> str | None:
    """The MLPerf benchmark the model text names (``(MLPerf llama2_70b_lora; ...``), or None."""
    match = re.search(r"\(MLPerf (\w+)", model)
    return match.group(1) if match else None


def _run_samples(notes: str, seq_len: float) -> float:
    """Samples one run trained, from the run's notes: ``total tokens T over R runs`` (T / R /
    seq_len), ``tokens per run = ... = N`` (N / seq_len) or ``samples per run A-B`` (their
    midpoint); NaN where they say none of these."""
    total = re.search(r"total tokens (\d+) over (\d+) runs", notes)
    if total and seq_len > 0:
        return float(total.group(1)) / float(total.group(2)) / seq_len
    per_run = re.search(r"tokens per run = [^=;]*= (\d+)", notes)
    if per_run and seq_len > 0:
        return float(per_run.group(1)) / seq_len
    span = re.search(r"samples per run (\d+)-(\d+)", notes)
    return (float(span.group(1)) + float(span.group(2))) / 2.0 if span else float("nan")


def load_power_rows(path: Path, catalogue: Catalogue, sources: Sources) -> PowerRows:
    """Read ``path`` (the metered power CSV) into :class:`PowerRows`. A row naming a GPU or
    system the catalogue lacks, or a missing column, is an
    :class:`~trainscale.errors.InputFileError` naming the file and line."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            records = list(csv.DictReader(handle, strict=True))
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        raise InputFileError(path, f"cannot read: {error}") from error
    if not records:
        raise InputFileError(path, "no data rows")
    missing = [name for name in _REQUIRED if name not in records[0]]
    if missing:
        raise InputFileError(path, f"missing column(s) {', '.join(missing)}")
    rows, rejects = [], []
    run_notes: dict[tuple[str, str, str], str] = {}
    for fields in records:  # a run's plan may be told in the notes of any of its rows
        run = (fields["source"], fields["model"], fields["num_gpus"])
        run_notes[run] = run_notes.get(run, "") + " " + (fields["notes"] or "")
    for line, fields in enumerate(records, start=2):
        fields = {k: (v or "") for k, v in fields.items()}
        fields["notes"] = run_notes[(fields["source"], fields["model"], fields["num_gpus"])]
        metric, citation = _strip(fields["metric"]), _strip(fields["source"])
        fields["metric"] = metric
        reason = _reason(fields)
        if reason is not None:
            rejects.append({"csv_row": line, "citation": citation, "metric": metric,
                            "reason": reason})  # fmt: skip
            continue
        observed = _number(fields["value"])
        if observed is None or observed <= 0:
            raise InputFileError(path, f"line {line}: value {fields['value']!r} is not a "
                                 "positive number")  # fmt: skip
        rows.append({
            **_configuration(fields, path, line, catalogue, sources), "citation": citation,
            "csv_row": line, "metric": metric, "observed": observed,
            "workload": _strip(fields["model"]).split(" (")[0],
            "measured_tokens_per_s_per_gpu": _number(fields["throughput_tokens_per_s_per_gpu"]),
            "benchmark": _benchmark(fields["model"]),
            "run_samples": _run_samples(fields["notes"], _number(fields["seq_len"]) or 0.0),
        })  # fmt: skip
    return PowerRows(pd.DataFrame(rows), pd.DataFrame(rejects))
