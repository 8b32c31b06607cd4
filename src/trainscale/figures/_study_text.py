"""The words of a study's scaling figure: its setup note (:func:`setup_note`) and the points
it asked for but could not plan (:func:`unplanned_points`), from the study file, the
catalogues and the simulated rows; nothing in them is a constant."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from trainscale.sim.system.hardware import HardwareCatalog
from trainscale.study.report import ReportSpec, column_value_label, format_value, series_label

if TYPE_CHECKING:
    from trainscale.study.spec import Study

__all__ = ["setup_note", "unplanned_points"]

# How a fixed column reads in the note: a format with {v} (the readable value).
_FIXED = {
    "model": "{v}",
    "gpu": "{v}",
    "seq_len": "sequence {v} tokens",
    "global_batch": "global batch {v} sequences",
    "micro_batch": "micro-batch {v} per GPU",
    "num_gpus": "{v} GPUs",
    "sharding": "{v} sharding",
    "recompute": "recompute {v}",
    "precision": "{v}",
    "framework": "framework {v}",
    "power_limit_w": "GPU power limit {v} W",
}


def setup_note(
    study: Study,
    spec: ReportSpec,
    hardware: HardwareCatalog,
    framework_default: str,
    *,
    dropped_memory: int = 0,
) -> str:
    """The study's setup in words, from its own file and the catalogues.

    Parameters
    ----------
    study : Study
        The study (its ``fixed``, ``sweep`` and ``derive`` values).
    spec : ReportSpec
        What the figure shows (which swept columns are x, series, facet or collapsed).
    hardware : HardwareCatalog
        GPU and system catalogue (``data/hardware.yaml``), for the system the study runs on.
    framework_default : str
        The framework profile a study without ``framework`` gets (``data/frameworks.yaml``).
    dropped_memory : int
        Simulated rows left out because they do not fit in memory.

    Returns
    -------
    str
        ``Study <name> setup: Llama-2 13B, A100 80GB on dgx-a100 (8 GPUs per node, 200 Gb/s NIC
        per GPU), ...; swept: ...``.
    """
    fixed = dict(study.fixed)
    fixed.update({k: v[0] for k, v in study.sweep.items() if len(v) == 1})
    parts = []
    for key, value in fixed.items():
        if key == "system":
            continue
        shown = format_value(key, value, spec.names)
        parts.append(_FIXED.get(key, f"{key} {{v}}").format(v=shown))
        if key == "gpu":
            parts[-1] += _system_words(hardware, str(value), fixed.get("system"))
    if "framework" not in fixed and "framework" not in study.sweep:
        parts.append(f"framework {framework_default} (default)")
    for key, value in study.derive.items():
        if key == "global_batch_tokens":
            parts.append(f"global batch {value:,} tokens (global_batch = tokens / seq_len)")
        else:
            parts.append(f"global batch {value:,} sequences per data-parallel rank")
    swept = []
    for key, values in study.sweep.items():
        if len(values) < 2:
            continue
        role = (
            "x" if key == spec.x else "facet" if key == spec.facet
            else "fastest kept" if key in spec.best_of else "series"
        )  # fmt: skip
        shown = ", ".join(format_value(key, v, spec.names) for v in values)
        swept.append(f"{key} {shown} ({role})")
    text = f"Study {study.name} setup: " + ", ".join(parts)
    if "gpu" not in fixed:
        text += "; each GPU on its catalogue default system"
    if swept:
        text += "; swept: " + "; ".join(swept)
    if spec.best_of:
        text += (
            ". Each point is the fastest (tokens/s) of "
            + " × ".join(spec.best_of)
            + " that fits in memory (open markers: with recomputation)"
        )
    if dropped_memory:
        text += f"; {dropped_memory:,} simulated configurations that do not fit in memory left out"
    return text + "."


def _system_words(hardware: HardwareCatalog, gpu: str, system: str | None) -> str:
    if gpu not in hardware.gpus:
        return ""
    default = system is None
    key = hardware.default_system.get(gpu) if default else system
    if key not in hardware.systems:
        return f" on {key}" if key else ""
    node = hardware.systems[key]
    nic = node.nic_bytes_per_s_per_gpu * 8 / 1e9
    words = f" on {key} ({node.gpus_per_node} GPUs per node, {nic:g} Gb/s NIC per GPU"
    return words + (", the GPU's default system)" if default else ")")


#: How the expansion's memory filter words a reject (:func:`trainscale.study.rules.expand_block`):
#: the memory it predicted, GiB per GPU.
_REJECT_MEMORY = re.compile(r"predicted ([0-9][0-9,]*(?:\.[0-9]+)?) GiB per GPU")


def _point_keys(frame: pd.DataFrame, spec: ReportSpec) -> pd.Series:
    """Each row's point of the figure: (facet and series words, x value)."""
    keys = [k for k in (*([spec.facet] if spec.facet else []), *spec.series) if k in frame]
    rows = frame[keys].itertuples(index=False, name=None)
    names = [series_label(keys, v, spec.names) for v in rows] if keys else [""] * len(frame)
    x = pd.to_numeric(frame[spec.x], errors="coerce").to_numpy(dtype=float)
    return pd.Series(list(zip(names, x, strict=True)), index=frame.index, dtype=object)


def _why(point_sim: pd.DataFrame, point_rejects: pd.DataFrame, hardware: HardwareCatalog) -> str:
    """Why one point has no plan: its memory (the smallest any of its configurations needs,
    from the simulated rows or the memory filter's rejects, against the GPU's HBM) and the
    other steps that dropped its configurations (named; with their first reason where memory
    is not the cause)."""
    memory = pd.to_numeric(point_sim.get("mem_gib_per_gpu", pd.Series(dtype=float)))
    needs = (
        memory[~point_sim["fits_memory"].fillna(False).astype(bool)].tolist()
        if len(point_sim)
        else []
    )
    reasons: list[str] = []
    for column, group in point_rejects.groupby("column", sort=True):
        if column == "filters.fits_memory":
            needs += [float(m.group(1).replace(",", "")) for r in group["reason"]
                      if (m := _REJECT_MEMORY.search(str(r)))]  # fmt: skip
        else:
            reasons.append(str(column))
    if needs or (point_rejects["column"] == "filters.fits_memory").any():
        both = [part.get("gpu", pd.Series(dtype=str)) for part in (point_sim, point_rejects)]
        gpus = pd.concat(both).dropna().astype(str)
        gpu = gpus.iloc[0] if len(gpus) else ""
        has = (
            f"; {hardware.label(gpu)} has {hardware.gpus[gpu].hbm_bytes / 2**30:g} GiB"
            if gpu in hardware.gpus else ""
        )  # fmt: skip
        smallest = f" (the smallest needs {min(needs):,.1f} GiB per GPU{has})" if needs else ""
        others = f"; the other plans dropped by {', '.join(reasons)}" if reasons else ""
        return f"no plan fits in memory{smallest}{others}"
    first = point_rejects.drop_duplicates("column")
    return "; ".join(f"{r.column}: {r.reason}" for r in first.itertuples()) or "no plan kept"


def unplanned_points(
    frame: pd.DataFrame,
    spec: ReportSpec,
    hardware: HardwareCatalog,
    rejects: pd.DataFrame | None = None,
) -> list[str]:
    """The points the study asked for that no configuration of theirs could plan, in words.

    A point is a (facet, series, x) of the figure (``best_of`` columns collapsed). It was asked
    for when a row of the simulated results ``frame`` or of the expansion's ``rejects``
    (``results/studies/<study>/rejects.parquet``: the grid rows that the filters or the
    validator dropped, with ``column`` and ``reason``) has it, and planned when a simulated row
    of it fits in memory. E.g. ``Llama-2 70B at 8 GPUs: no plan fits in memory (the smallest
    needs 142.3 GiB per GPU; H100 80GB has 80 GiB)``; in x order; empty when every point has a
    plan.
    """
    rows = frame[frame["source"] == "sim"] if "source" in frame.columns else frame
    if rejects is None or rejects.empty:
        rejects = pd.DataFrame(columns=["column", "reason", spec.x])
    if spec.x not in rows.columns or spec.x not in rejects.columns:
        return []
    sim_keys, reject_keys = _point_keys(rows, spec), _point_keys(rejects, spec)
    fits = rows["fits_memory"].fillna(False).astype(bool) if len(rows) else pd.Series(dtype=bool)
    planned = set(sim_keys[fits]) if len(rows) else set()
    asked = list(dict.fromkeys([*sim_keys, *reject_keys]))
    out = []
    for key in sorted((k for k in asked if k not in planned), key=lambda k: (k[1], k[0])):
        name, x = key
        why = _why(rows[sim_keys == key] if len(rows) else rows,
                   rejects[reject_keys == key] if len(rejects) else rejects, hardware)  # fmt: skip
        where = column_value_label(spec.x, x, spec.names)
        out.append(f"{name + ' at ' if name else ''}{where}: {why}")
    return out
