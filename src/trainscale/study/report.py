"""What a study's per-study outputs show, and which simulated rows they show.

A study's swept columns (those with more than one value) each take one role:

- ``x``: the x axis (log 2 scale); default ``num_gpus`` when swept, else the first swept numeric
  column;
- ``best_of``: collapsed to the best value, per series and x the row with the highest tokens/s
  among those that fit in memory; default the swept :data:`CHOICE_KEYS` (micro-batch and
  recomputation: settings one picks the fastest of);
- ``series``: one line (and one fit) per combination; default every other swept column, except
  that the :data:`PLAN_KEYS` join ``best_of`` when the series would number more than
  :data:`MAX_SERIES`;
- ``facet``: one row of panels per value; default none, unless the series still number more
  than :data:`MAX_SERIES`, then the series column with the fewest values.

A ``report:`` block in the study file sets any of these (and ``metrics``); what it leaves out
follows the defaults. :func:`report_spec` checks the result, so a mistake stops the workflow at
start-up naming the study file and the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from trainscale.errors import InputFileError
from trainscale.names import Names

if TYPE_CHECKING:
    from trainscale.study.spec import Study

__all__ = [
    "CHOICE_KEYS",
    "COLUMN_NAMES",
    "COLUMN_WORDS",
    "DEFAULT_METRICS",
    "EXPERT_PLAN_COLUMNS",
    "MAX_SERIES",
    "METRICS",
    "PLAN_COLUMNS",
    "PLAN_KEYS",
    "ReportSpec",
    "column_value_label",
    "expert_rows",
    "format_value",
    "has_experts",
    "over_memory",
    "plan_columns",
    "plan_switches",
    "report_spec",
    "select_rows",
    "series_label",
    "within_usable_memory",
]

#: Metric column → (axis label, log scale?, factor to the plotted unit, interval columns or None).
#: The interval of the global throughput is that of tokens/s per GPU times the GPU count.
METRICS: dict[str, tuple[str, bool, float, tuple[str, str] | None]] = {
    "tokens_per_s": ("Global tokens/s", True, 1.0,
                     ("tokens_per_s_per_gpu_lo", "tokens_per_s_per_gpu_hi")),
    "tokens_per_s_per_gpu": ("Tokens/s per GPU", True, 1.0,
                             ("tokens_per_s_per_gpu_lo", "tokens_per_s_per_gpu_hi")),
    "mfu": ("MFU (%)", False, 100.0, None),
    "power_w_per_gpu": ("Power per GPU (W)", False, 1.0, None),
    "exposed_comm_frac": ("Exposed comm. (% of step)", False, 100.0, None),
    "step_time_s": ("Step time (s)", True, 1.0, ("step_time_s_lo", "step_time_s_hi")),
    "energy_j_per_token": ("GPU energy per token (J)", True, 1.0, None),
    "mem_gib_per_gpu": ("Memory per GPU (GiB)", False, 1.0, None),
}  # fmt: skip

#: Panels drawn when the study's ``report:`` block names no metrics.
DEFAULT_METRICS: tuple[str, ...] = (
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "power_w_per_gpu",
    "exposed_comm_frac",
)

#: Swept columns collapsed to their fastest value by default (settings, not setups).
CHOICE_KEYS: tuple[str, ...] = ("micro_batch", "recompute")

#: Plan columns collapsed to their fastest value when they would give too many series.
PLAN_KEYS: tuple[str, ...] = (
    "tp", "pp", "cp", "vpp", "ep", "etp", "sharding", "sequence_parallel",
)  # fmt: skip

#: Most series one figure shows before the defaults collapse plan columns or add a facet.
MAX_SERIES = 10


@dataclass(frozen=True, slots=True)
class ReportSpec:
    """What one study's outputs show (see the module docstring)."""

    x: str
    """Column on the x axis (GPUs by default)."""
    series: tuple[str, ...]
    """Columns whose combinations are the series."""
    facet: str | None
    """Column with one row of panels per value; None for one row."""
    best_of: tuple[str, ...]
    """Columns collapsed to the fastest row that fits in memory."""
    metrics: tuple[str, ...]
    """Metric columns, one panel each (keys of :data:`METRICS`)."""
    levels: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """Swept column → its values in the study file's order (the order of series and facets)."""
    single_label: str = "all rows"
    """Name of the one series of a study with no series column (its fixed model and GPU)."""
    names: Names = field(default_factory=Names)
    """The GPUs' and models' labels (the catalogues' ``label``) its values are shown with."""


def _is_numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def report_spec(study: Study, names: Names | None = None) -> ReportSpec:
    """The :class:`ReportSpec` of ``study``: its ``report:`` block, defaults for the rest;
    ``names`` (:meth:`Names.of` the catalogues the study was checked with) labels its GPUs and
    models, which are otherwise shown as their keys.

    Raises
    ------
    trainscale.errors.InputFileError
        Naming the study file and the ``report.*`` key: a column that is not swept, a swept
        column with no role or with two, or a non-numeric x axis.
    """
    block: Mapping[str, Any] = study.report or {}
    varying = [key for key, values in study.sweep.items() if len(values) > 1]
    sizes = {key: len(study.sweep[key]) for key in varying}
    problems: list[str] = []

    def swept(key: str, where: str) -> None:
        if key not in varying:
            problems.append(
                f"key '{where}': {key!r} is not a swept column with more than one value; "
                f"swept: {', '.join(varying) or 'none'}"
            )

    if "x" in block:
        x = block["x"]
        swept(x, "report.x")
        if x in study.sweep and not _is_numeric(study.sweep[x]):
            problems.append(f"key 'report.x': {x!r} is not numeric; the x axis needs numbers")
    elif "num_gpus" in varying:
        x = "num_gpus"
    else:
        numeric = [k for k in varying if k not in CHOICE_KEYS and _is_numeric(study.sweep[k])]
        x = numeric[0] if numeric else "num_gpus"
    best_of = list(block.get("best_of", [k for k in CHOICE_KEYS if k in varying and k != x]))
    facet = block.get("facet")
    if "series" in block:
        series = list(block["series"])
    else:
        taken = {x, facet, *best_of}
        series = [k for k in varying if k not in taken]
        if "best_of" not in block and _count(series, sizes) > MAX_SERIES:
            best_of += [k for k in series if k in PLAN_KEYS]
            series = [k for k in series if k not in PLAN_KEYS]
        if "facet" not in block and _count(series, sizes) > MAX_SERIES and len(series) > 1:
            facet = min(series, key=lambda k: (sizes[k], series.index(k)))
            series.remove(facet)
    for key in series:
        swept(key, "report.series")
    for key in best_of:
        swept(key, "report.best_of")
    if facet is not None:
        swept(facet, "report.facet")
    roles = [x, *series, *best_of, *([facet] if facet else [])]
    twice = sorted({k for k in roles if roles.count(k) > 1})
    if twice:
        problems.append(f"key 'report': {', '.join(twice)} given more than one role")
    missing = [k for k in varying if k not in roles]
    if missing:
        problems.append(
            f"key 'report': swept column(s) {', '.join(missing)} have no role; name each under "
            "report.series, report.facet or report.best_of"
        )
    if problems:
        raise InputFileError(
            study.path,
            problems[0] if len(problems) == 1 else "invalid report:\n  " + "\n  ".join(problems),
        )
    metrics = tuple(block.get("metrics", DEFAULT_METRICS))
    levels = {key: tuple(values) for key, values in study.sweep.items()}
    fixed = {**study.fixed, **{k: v[0] for k, v in study.sweep.items() if len(v) == 1}}
    names = names or Names()
    single = ", ".join(format_value(k, fixed[k], names) for k in ("model", "gpu") if k in fixed)
    return ReportSpec(
        x, tuple(series), facet, tuple(best_of), metrics, levels, single or "all rows", names
    )


def _count(keys: Sequence[str], sizes: Mapping[str, int]) -> int:
    return math.prod(sizes[k] for k in keys)


def format_value(key: str, value: Any, names: Names | None = None) -> str:
    """One column value for people: catalogue names readable, whole numbers without ``.0`` and
    with thousands separators (``llama2-13b`` → ``Llama-2 13B``, ``2048.0`` → ``2,048``).
    ``names`` gives the labels of ``model`` and ``gpu`` values (:attr:`ReportSpec.names`);
    without it they are shown as their keys."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if key in ("model", "gpu"):
        return (names or Names()).label(key, str(value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) or hasattr(value, "__index__"):
        number = float(value)
        return f"{int(number):,}" if number.is_integer() else f"{number:g}"
    return str(value)


#: How a legend or label names a column's value: ``{}`` is the formatted value. Columns not
#: listed read ``<column> <value>``; model, GPU and framework read as their value alone.
COLUMN_WORDS: dict[str, str] = {
    "model": "{}", "gpu": "{}", "framework": "{}", "system": "{}",
    "num_gpus": "{} GPUs", "seq_len": "sequence {}", "global_batch": "global batch {}",
    "micro_batch": "micro-batch {}", "power_limit_w": "{} W cap",
    "nic_gbit_per_s_per_gpu": "NIC {} Gb/s", "gpus_per_node": "{} GPUs per node",
    "recompute": "recompute {}", "precision": "{}", "sharding": "{}",
}  # fmt: skip

#: Plain words for a column in running text ("per doubling of the sequence length").
COLUMN_NAMES: dict[str, str] = {
    "num_gpus": "GPU count", "seq_len": "sequence length", "global_batch": "global batch",
    "micro_batch": "micro-batch", "power_limit_w": "power limit",
    "nic_gbit_per_s_per_gpu": "NIC bandwidth", "gpus_per_node": "GPUs per node",
}  # fmt: skip


def column_value_label(key: str, value: Any, names: Names | None = None) -> str:
    """One column's value for a legend: ``64 GPUs``, ``pytorch``, ``tp 2``
    (:data:`COLUMN_WORDS`; ``names`` as for :func:`format_value`)."""
    return COLUMN_WORDS.get(key, key + " {}").format(format_value(key, value, names))


def series_label(keys: Sequence[str], values: Sequence[Any], names: Names | None = None) -> str:
    """``Llama-2 7B, tp 2`` for series columns ``keys`` and their ``values`` (each as
    :func:`column_value_label` writes it); ``all rows`` when none."""
    parts = [column_value_label(k, v, names) for k, v in zip(keys, values, strict=True)]
    return ", ".join(parts) or "all rows"


#: The columns that make a plan, in the order a plan's text lists them.
PLAN_COLUMNS: tuple[str, ...] = (
    "framework", "tp", "pp", "cp", "vpp", "sharding", "recompute", "micro_batch",
)  # fmt: skip
#: The expert layout of a mixture-of-experts plan (expert-parallel and expert tensor-parallel
#: degrees), listed with the plan where a study's rows hold one (:func:`has_experts`).
EXPERT_PLAN_COLUMNS: tuple[str, ...] = ("ep", "etp")


def has_experts(rows: pd.DataFrame) -> bool:
    """Whether any row has an expert layout of its own (``ep`` > 1 or ``etp`` other than
    ``tp``): then the plan's text and the points table name the expert layout too."""
    if "ep" not in rows.columns:
        return False
    ep = pd.to_numeric(rows["ep"], errors="coerce").fillna(1)
    differs = False
    if "etp" in rows.columns:
        etp = pd.to_numeric(rows["etp"], errors="coerce")
        differs = bool((etp.notna() & (etp != pd.to_numeric(rows["tp"]))).any())
    return bool((ep > 1).any()) or differs


def expert_rows(rows: pd.DataFrame, among: pd.DataFrame | None = None) -> pd.Series:
    """Per row of ``rows``, whether its plan names an expert layout: its model's rows in
    ``among`` (default ``rows``; a study's simulated rows) hold one (:func:`has_experts`). A dense
    model's ``ep`` 1 and ``etp`` = ``tp`` say nothing, so a dense row in a study beside
    mixture-of-experts models shows no ``ep · etp``. Without a ``model`` column: the whole frame's
    :func:`has_experts`."""
    among = rows if among is None else among
    if "model" not in rows.columns or "model" not in among.columns:
        return pd.Series(has_experts(among), index=rows.index, dtype=bool)
    models = {str(m) for m, part in among.groupby("model", sort=False) if has_experts(part)}
    return rows["model"].astype(str).isin(models)


def plan_columns(rows: pd.DataFrame) -> tuple[str, ...]:
    """:data:`PLAN_COLUMNS`, with :data:`EXPERT_PLAN_COLUMNS` after ``vpp`` where the rows hold
    an expert layout (:func:`has_experts`)."""
    if not has_experts(rows):
        return PLAN_COLUMNS
    at = PLAN_COLUMNS.index("vpp") + 1
    return (*PLAN_COLUMNS[:at], *EXPERT_PLAN_COLUMNS, *PLAN_COLUMNS[at:])


def plan_switches(rows: pd.DataFrame, spec: ReportSpec) -> pd.Series:
    """Per selected row (:func:`select_rows`), what of the winning plan changed from the
    previous x value of its facet and series, as text (``tp 4, micro-batch 2``); empty at a
    series' first point and where nothing changed. Only the ``best_of`` columns can change
    within a series (the others are fixed or are the series)."""
    columns = [c for c in plan_columns(rows) if c in spec.best_of and c in rows.columns]
    out = pd.Series("", index=rows.index, dtype=object)
    if not columns or rows.empty:
        return out
    groups = rows.groupby(["facet_label", "series_label"], sort=False)
    previous = groups[columns].shift()
    for index in rows.index:
        before = previous.loc[index]
        if before.isna().all():
            continue
        changed = [c for c in columns if rows.loc[index, c] != before[c]]
        out[index] = ", ".join(
            column_value_label(c, rows.loc[index, c], spec.names) for c in changed
        )
    return out


def over_memory(rows: pd.DataFrame) -> pd.Series:
    """Rows kept within the memory margin but predicted above the usable memory (flagged
    ``memory:`` in ``extrapolation``, :mod:`trainscale.sim.memory_margin`); False without the
    column."""
    if "extrapolation" not in rows.columns:
        return pd.Series(False, index=rows.index)
    return rows["extrapolation"].fillna("").astype(str).str.contains("memory:", regex=False)


def within_usable_memory(rows: pd.DataFrame) -> pd.Series:
    """Rows that fit within the usable memory: ``fits_memory`` and not flagged by
    :func:`over_memory` (what the paper's reproduction and the shipped tables count as fitting:
    a plan kept only within the memory margin is not offered as a best plan there)."""
    fits = rows["fits_memory"].fillna(False).astype(bool)
    return fits & ~over_memory(rows)


def select_rows(frame: pd.DataFrame, spec: ReportSpec) -> pd.DataFrame:
    """The rows a study's figure and fits show: simulated rows that fit in memory, one per
    facet, series and x value (the fastest, by ``tokens_per_s``, over the ``best_of`` columns,
    among the plans predicted within the usable memory where any is, else among those flagged
    within the memory margin; ties go to the first in grid order), with ``facet_label`` and
    ``series_label`` added and sorted by facet, series and x.

    Parameters
    ----------
    frame : pandas.DataFrame
        One study's rows in the dataset schema (``results/dataset``, ``source=sim``).
    spec : ReportSpec
        What the outputs show.

    Returns
    -------
    pandas.DataFrame
        The kept rows; ``attrs["dropped_memory"]`` counts the rows left out because they do
        not fit in memory.
    """
    rows = frame[frame["source"] == "sim"] if "source" in frame.columns else frame
    fits = (
        rows["fits_memory"].fillna(False).astype(bool)
        if "fits_memory" in rows.columns
        else pd.Series(True, index=rows.index)
    )
    dropped = int((~fits).sum())
    rows = rows[fits].reset_index(drop=True)
    group = [*([spec.facet] if spec.facet else []), *spec.series, spec.x]
    group = [k for k in group if k in rows.columns]
    if spec.best_of and len(rows):
        order = rows.assign(
            _over=over_memory(rows),
            _neg=-pd.to_numeric(rows["tokens_per_s"]),
            _pos=range(len(rows)),
        )
        order = order.sort_values([*group, "_over", "_neg", "_pos"], kind="stable")
        rows = order.drop_duplicates(group).drop(columns=["_over", "_neg", "_pos"])
    rows = rows.copy()
    rows["facet_label"] = (
        [column_value_label(spec.facet, v, spec.names) for v in rows[spec.facet]]
        if spec.facet
        else ""
    )
    keys = [k for k in spec.series if k in rows.columns]
    tuples = rows[keys].itertuples(index=False, name=None)
    rows["series_label"] = (
        [series_label(keys, values, spec.names) for values in tuples] if keys else spec.single_label
    )
    rows = rows.sort_values(group, key=lambda c: _order(spec, c), kind="stable")
    rows = rows.reset_index(drop=True)
    rows.attrs["dropped_memory"] = dropped
    return rows


def _order(spec: ReportSpec, column: pd.Series) -> pd.Series:
    """Sort key of a series or facet column: the position of each value in the study file."""
    levels = list(spec.levels.get(str(column.name), ()))
    if column.name == spec.x or not levels:
        return pd.to_numeric(column, errors="coerce") if column.name == spec.x else column
    position = {v: i for i, v in enumerate(levels)}
    return column.map(lambda v: position.get(v, len(levels)))
