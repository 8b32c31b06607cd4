"""Normalise ``data/published/measurements.csv`` into configurations the simulator can predict.

Every row of the file ends in exactly one of three places:

- **throughput rows** — a configuration (the configuration-table columns) plus the published
  number, its metric, and the same number as tokens/s per GPU (``observed_tokens_per_s_per_gpu``)
  converted with the FLOP convention its source used (see :func:`flops_per_token`);
- **collective rows** — nccl-tests bus bandwidths, predicted with the collective cost model;
- **rejects** — with the reason the simulator cannot represent the row.

The steps live in their own modules: :mod:`~trainscale.published.csv` (read and check, before
anything is normalised), :mod:`~trainscale.published.matching` (free text -> catalogue keys),
:mod:`~trainscale.published.sources` (the per-source rules, assumptions and power anchor of
``data/published/sources.yaml``), :mod:`~trainscale.published.normalise` (throughput rows) and
:mod:`~trainscale.published.collectives` (nccl-tests rows). This module assembles them and keeps
the public names importable from here. Where a source leaves out a field the simulator needs,
the row either gets a documented assumption (listed in its ``assumptions`` column and in
``sources.yaml``) or is rejected; nothing is guessed silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.paths import data_dir
from trainscale.published.collectives import collective_row
from trainscale.published.csv import ParsedValue, check_record, read_records
from trainscale.published.matching import FrameworkNotMapped, framework_profile
from trainscale.published.moe import bridge_row, catalogue_model, load_moe_measurements
from trainscale.published.normalise import (
    BEHAVIOUR_OVERRIDES,
    Rejected,
    Row,
    flops_per_token,
    moe_layout,
    observed_tokens_per_s_per_gpu,
    observed_with_shapes,
    throughput_row,
)
from trainscale.published.sources import PowerAnchor, Sources, load_sources

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "BEHAVIOUR_OVERRIDES",
    "FrameworkNotMapped",
    "PowerAnchor",
    "PublishedData",
    "flops_per_token",
    "framework_mapping",
    "framework_profile",
    "load_published",
    "observed_tokens_per_s_per_gpu",
]


@dataclass(frozen=True, slots=True)
class PublishedData:
    """The three destinations of the published rows, and the published power anchor."""

    throughput: pd.DataFrame
    """Configuration columns, provenance, ``published_metric``, ``published_value``,
    ``observed_tokens_per_s_per_gpu``, ``flop_convention``, ``assumptions``, ``csv_row``,
    ``framework`` (a profile key of the catalogue's framework list), ``framework_text`` (the
    source's wording) and the behaviour overrides of :data:`BEHAVIOUR_OVERRIDES` (NA = the
    profile's default)."""
    collectives: pd.DataFrame
    """``csv_row``, provenance, ``collective`` (allreduce, allgather, reducescatter, alltoall,
    sendrecv), ``algorithm`` ("" = NCCL's choice, or the forced nvlstree/nvls/ring/tree),
    ``size_bytes``, ``num_gpus``, ``gpus_per_node``, ``gpu``, ``nic_gbit_per_s_per_gpu``,
    ``fabric``,
    ``nvls`` (False where NVLS was disabled), ``observed_busbw_gbytes_per_s``, ``assumptions``."""
    rejects: pd.DataFrame
    """``csv_row``, provenance, ``published_metric``, ``published_value_text``, ``reason``."""
    power_anchor: PowerAnchor | None = None
    """The published power drop the power prediction is checked against (``sources.yaml``); None
    for data built without one (a fit of the throughput parameters only)."""
    moe: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Mixture-of-experts throughput rows (:mod:`trainscale.published.moe`): the columns of
    :attr:`throughput` plus ``ep``, ``etp``, ``moe_routing``, ``capacity_factor``,
    ``moe_dispatcher`` and ``data_file`` (the CSV the row is on). Kept apart from
    :attr:`throughput`, which the dense parameters are fitted on; empty: none."""


def _power_row_reason(row: Row, parsed: ParsedValue) -> str:
    """The reject reason of a per-GPU power row: what it measures and what is missing."""
    what = {"power_w_per_gpu_avg": "average GPU power while training",
            "power_w_per_gpu_checkpointing": "GPU power while writing checkpoints"}  # fmt: skip
    missing = [
        label
        for label, absent in (
            ("GPU count", row.integer("num_gpus") is None),
            ("GPUs per node", row.integer("gpus_per_node") is None),
            ("model shape", row.integer("layers") is None),
            ("parallel plan (TP/PP/DP, sharding)", not row.text("tp") and not row.text("sharding")),
            ("batch and sequence length", not row.text("global_batch_seqs")),
        )
        if absent
    ]
    kind = {"lower_bound": "lower bound ", "approximate": "approximately "}.get(parsed.kind, "")
    return (
        f"power anchor: {what[row.text('metric')]}, {kind}{parsed.number:g} W per GPU on "
        f"{row.text('gpu') or 'an unstated GPU'}; no configuration the simulator can reproduce "
        f"({', '.join(missing)} not stated)"
    )


_NODE_POWER = ("power_note", "node_power_kW_max_observed", "node_power_fraction_of_TDP_pct")


def _normalise(
    row: Row,
    parsed: ParsedValue,
    sources: Sources,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> tuple[str, dict]:
    """``(destination, row)``: throughput, collective or reject; GPU and model wording is
    matched to ``hardware`` and ``models`` (their ``aliases``)."""
    metric = row.text("metric")
    rules = sources.for_source(row.text("source"))
    try:
        if metric == "busbw_GBps":
            return "collective", collective_row(row, rules, hardware)
        if metric in ("power_w_per_gpu_avg", "power_w_per_gpu_checkpointing"):
            raise Rejected(_power_row_reason(row, parsed))
        if metric in _NODE_POWER:
            raise Rejected(
                "node-level or qualitative power: the simulator predicts GPU power only, "
                "and the node's CPUs, NICs and fans are not modelled"
            )
        if metric == "scaling_efficiency_pct":
            raise Rejected("encoder-decoder model (T5): the simulator models decoder-only "
                           "transformers")  # fmt: skip
        if moe_layout(row) is not None:
            return "moe", _moe_row(row, parsed, sources, hardware, models)
        return "throughput", throughput_row(
            row,
            parsed,
            rules,
            hardware,
            models,
            patterns=sources.frameworks,
            profiles=sources.profiles,
        )
    except Rejected as reason:
        return "reject", row.reject(str(reason))


def _moe_row(
    row: Row, parsed: ParsedValue, sources: Sources, hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> dict:  # fmt: skip
    """A mixture-of-experts row of the CSV: normalised as a dense row under its catalogue model
    (matched by name, :func:`~trainscale.published.moe.catalogue_model`), with the MoE plan
    columns its notes print (:func:`~trainscale.published.moe.bridge_row`)."""
    key = catalogue_model(row.text("model"), models)
    if key is None or models[key].moe is None:
        raise Rejected(
            f"mixture-of-experts model ({moe_layout(row)}) {row.text('model')!r} is not a "
            "mixture-of-experts model of data/models.yaml (add its name to the model's aliases)"
        )
    named = Row(row.line, {**row.r, "model": models[key].aliases[0]})
    dense = throughput_row(named, parsed, sources.for_source(row.text("source")), hardware,
                           models, patterns=sources.frameworks,
                           profiles=sources.profiles)  # fmt: skip
    try:
        return bridge_row(row, dense)
    except ValueError as error:
        raise Rejected(str(error)) from None


def _moe_rows(
    rows: list[dict], path: Path | None, hardware, models, frameworks: Sequence[str]
) -> pd.DataFrame:
    """The MoE rows of measurements.csv, then those of ``path`` (``moe-measurements.csv``;
    None or absent: none), with their observed tokens/s per GPU."""
    frames = []
    if rows:
        bridge = pd.DataFrame(rows)
        bridge["observed_tokens_per_s_per_gpu"] = observed_with_shapes(bridge, models)
        frames.append(bridge)
    if path is not None and path.is_file():
        frames.append(
            load_moe_measurements(path, hardware=hardware, models=models, frameworks=frameworks)
        )
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    for name in BEHAVIOUR_OVERRIDES:
        if name not in frame:
            frame[name] = None
    return frame


def load_published(
    path: str | Path | None = None,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    frameworks: Sequence[str],
    sources: str | Path | Sources | None = None,
    moe: str | Path | None = None,
) -> PublishedData:
    """Read, check and normalise the published measurements (default
    ``data/published/measurements.csv``).

    Every record is checked first (:mod:`trainscale.published.csv`): a malformed one, a
    duplicate row or a header without rows raises :class:`~trainscale.errors.InputFileError`
    naming the file, line, 0-based data row, column, value and what is allowed. Well-formed rows
    the simulator cannot represent go to the rejects.

    ``hardware`` (the physical limits a value is checked against) and ``models`` (the shapes
    the observed tokens/s are derived with) are the caller's catalogues, ``frameworks`` its
    framework list (``Catalogue.framework_keys``: the profiles a row's framework may map to);
    ``sources``: the
    per-source rules (default: the ``sources.yaml`` beside the CSV, so a CSV and its rules
    travel together, or the shipped ``data/published/sources.yaml`` where the CSV has none).
    ``moe``: the published mixture-of-experts runs (default: ``moe-measurements.csv`` beside the
    CSV, where there is one), read into :attr:`PublishedData.moe` with the CSV's own MoE rows.
    """
    path = Path(path) if path is not None else data_dir() / "published" / "measurements.csv"
    if sources is None:
        beside = path.parent / "sources.yaml"
        sources = beside if beside.is_file() else data_dir() / "published" / "sources.yaml"
    if not isinstance(sources, Sources):
        sources = load_sources(sources, frameworks=frameworks)
    out: dict[str, list[dict]] = {"throughput": [], "collective": [], "reject": [], "moe": []}
    for record in read_records(path):
        parsed = check_record(path, record, hardware)
        where, row = _normalise(Row(record.line, record.fields), parsed, sources, hardware, models)
        out[where].append(row)
    throughput = pd.DataFrame(out["throughput"])
    if not throughput.empty:
        for name, allowed in BEHAVIOUR_OVERRIDES.items():
            column = throughput[name]
            if allowed == (True, False):
                throughput[name] = column.astype("boolean")
            else:  # text: None where the profile's default applies
                throughput[name] = column.astype(object).where(column.notna(), None)
    throughput["observed_tokens_per_s_per_gpu"] = observed_with_shapes(throughput, models)
    return PublishedData(
        throughput=throughput,
        collectives=pd.DataFrame(out["collective"]),
        rejects=pd.DataFrame(out["reject"]),
        power_anchor=sources.power_anchor,
        moe=_moe_rows(out["moe"], Path(moe) if moe is not None else
                      path.parent / "moe-measurements.csv", hardware, models, frameworks),
    )  # fmt: skip


def framework_mapping(published: PublishedData) -> pd.DataFrame:
    """How each framework text of the throughput rows was mapped: ``framework_text``,
    ``framework`` and ``rows`` (the number of throughput rows with that text)."""
    rows = published.throughput
    if rows.empty:
        return pd.DataFrame({"framework_text": [], "framework": [], "rows": []})
    return (
        rows.groupby(["framework_text", "framework"], sort=True).size().rename("rows").reset_index()
    )
