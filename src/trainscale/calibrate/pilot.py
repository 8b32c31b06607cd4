"""Pilot refit: refit only what a user's measured rows identify, chosen by the data.

The rule (``trainscale calibrate --measurements``, :func:`trainscale.calibrate.user.calibrate_user`)
----------------------------------------------------------------------------------------------
A nested **ladder** of candidate refits, each adding parameters only when the rows hold the
evidence for them (:func:`ladder`):

1. ``level`` -- always, from one row up: ``gemm_efficiency_offset_<framework>`` of each framework
   present, the log offset of that software stack's GEMM efficiency (the dominant compute term:
   one multiplicative level of the stack's compute efficiency on the GPU it ran on).
2. ``network`` -- only when the rows span **two or more node counts** (``ceil(num_gpus /
   gpus_per_node)``): :data:`NETWORK` (``nic_efficiency``, ``congestion_per_doubling``,
   ``straggler_cv``, ``nvlink_efficiency``). Rows on one node never move a network term.
3. ``layout`` -- only when the rows hold **two or more layouts** (distinct ``tp, pp, cp, vpp,
   sharding``): the layout-sensitive offsets of the frameworks present (attention efficiency,
   elementwise traffic and overlap slowdown; the FP8-GEMM offset only with fp8 rows), whose weight
   in a step changes with the layout.

Within a rung a parameter is added only if the rows respond to it (moving it by a tenth of its
bound range changes some row's prediction by more than 0.1 %:
:func:`sensitive_parameters`); a parameter no row responds to is never
changed. A rung that adds nothing is not a candidate.

**Choice** (:func:`choose`): with rows at two or more GPU counts, every candidate is fitted on the
rows below the largest GPU count and scored by the MAPE of tokens/s per GPU on the rows at the
largest count (*leave-largest-scale-out*). The chosen refit is the **simplest candidate within
noise of the best**: its score is at most ``best + max(SE, NOISE_FLOOR_PCT)``, ``SE`` the standard
error of the best candidate's per-row absolute percentage errors on the left-out rows (0 with one
row) and :data:`NOISE_FLOOR_PCT` = 1 percentage point (published and measured throughputs repeat to
about 1 %). With one GPU count there is nothing to leave out and the level alone is refitted. The
chosen candidate is then fitted on all rows.

**Shrinkage**: every fit is :func:`trainscale.calibrate.fit.fit_throughput` on the rows alone,
started from and with every prior centred on the base (shipped) calibration, every parameter
outside the candidate pinned at its base value. The prior widths are the shipped ones (0.1 for a
framework offset: a stack's level within about 10 % of the pool's) and each row counts as a
measurement with log noise :data:`ROW_LOG_NOISE` = 0.03 (a training run's tokens/s repeats to about
3 %), i.e. ``prior_scale = 1 / ROW_LOG_NOISE``: one row moves a framework offset
``0.1² / (0.1² + 0.03²)`` = 92 % of the way to where it alone would put it, four rows 98 %. Both
numbers were fixed before any validation was run; nothing here is tuned to the published rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.schema.choices import DEFAULT_FRAMEWORK
from trainscale.sim.calibration import Calibration
from trainscale.sim.parameters import parameter_spec, parameters

if TYPE_CHECKING:
    from trainscale.sim.catalogue import Catalogue

__all__ = [
    "LAYOUT_COLUMNS",
    "MEASURED",
    "NETWORK",
    "NOISE_FLOOR_PCT",
    "ROW_LOG_NOISE",
    "PilotReport",
    "choose",
    "ladder",
    "refit_pilots",
    "sensitive_parameters",
]

MEASURED = "measured_tokens_per_s_per_gpu"
NETWORK = ("nic_efficiency", "congestion_per_doubling", "straggler_cv", "nvlink_efficiency")
LAYOUT_COLUMNS = ("tp", "pp", "cp", "vpp", "sharding")
_LAYOUT_BASES = ("attention_efficiency", "elementwise_traffic", "overlap_slowdown")
ROW_LOG_NOISE = 0.03
NOISE_FLOOR_PCT = 1.0


@dataclass(frozen=True)
class PilotReport:
    """What a pilot refit did, for the CLI to print and the file to record.

    ``refitted``: the parameters the chosen refit changed (may hold fewer than the rung lists if
    one kept its base value). ``ladder``: one row per candidate (``rung``, ``parameters`` as a
    comma-separated string, ``llso_mape_pct``: leave-largest-scale-out MAPE of tokens/s per GPU,
    NaN with one GPU count; ``chosen``). ``chosen``: the chosen rung. ``noise_pct``: the margin
    used. ``largest_gpus``: the left-out GPU count (0 with one count). ``in_sample_mape_pct``:
    the refit's MAPE on all rows; ``shipped_mape_pct``: the base calibration's on the same rows.
    """

    refitted: tuple[str, ...]
    ladder: pd.DataFrame
    chosen: str
    noise_pct: float
    largest_gpus: int
    in_sample_mape_pct: float
    shipped_mape_pct: float
    candidates: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _frameworks(table: pd.DataFrame, framework_keys: tuple[str, ...]) -> list[str]:
    """The frameworks of the catalogue's list ``framework_keys`` the rows run, in its order."""
    if "framework" not in table.columns:
        return [DEFAULT_FRAMEWORK]
    present = set(table["framework"].fillna(DEFAULT_FRAMEWORK).astype(str).str.lower())
    return [fw for fw in framework_keys if fw in present]


def _evidence(table: pd.DataFrame, catalogue: Catalogue) -> tuple[int, int]:
    """(distinct node counts, distinct layouts) of the rows."""
    from trainscale.sim.configs import build_configs

    c, _, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    nodes = np.ceil(c.plan.num_gpus / np.maximum(c.system.gpus_per_node, 1)).astype(int)
    layouts = {
        tuple(np.asarray(getattr(c.plan, col))[i] for col in LAYOUT_COLUMNS) for i in range(len(c))
    }
    return len(set(nodes.tolist())), len(layouts)


def ladder(
    table: pd.DataFrame, base: Calibration, catalogue: Catalogue
) -> dict[str, tuple[str, ...]]:
    """The nested candidates the rows hold evidence for: ``{rung: parameters}``, in order
    ``level``, ``network``, ``layout`` (each including the previous ones), parameters filtered
    by the rows' response (module docstring)."""

    frameworks = _frameworks(table, catalogue.framework_keys)
    fp8 = "precision" in table.columns and bool((table["precision"].astype(str) == "fp8").any())
    nodes, layouts = _evidence(table, catalogue)
    rungs: list[tuple[str, list[str]]] = [
        ("level", [f"gemm_efficiency_offset_{fw}" for fw in frameworks])
    ]
    if nodes >= 2:
        rungs.append(("network", list(NETWORK)))
    if layouts >= 2:
        bases = (*_LAYOUT_BASES, "fp8_gemm") if fp8 else _LAYOUT_BASES
        rungs.append(("layout", [f"{b}_offset_{fw}" for fw in frameworks for b in bases]))
    out: dict[str, tuple[str, ...]] = {}
    kept: tuple[str, ...] = ()
    for rung, names in rungs:
        added = tuple(n for n in sensitive_parameters(table, base, tuple(names), catalogue))
        if added or rung == "level":
            kept = (*kept, *added)
            out[rung] = kept
    return out


def _data(table: pd.DataFrame):
    from trainscale.published.measurements import PublishedData

    rows = table.reset_index(drop=True)
    rows = rows.assign(
        observed_tokens_per_s_per_gpu=rows[MEASURED].to_numpy(np.float64),
        citation="pilot", csv_row=np.arange(1, len(rows) + 1),
    )  # fmt: skip
    return PublishedData(
        throughput=rows, collectives=pd.DataFrame(), rejects=pd.DataFrame(columns=["csv_row"])
    )


def _fit(
    table: pd.DataFrame, names: tuple[str, ...], base: Calibration, catalogue: Catalogue
) -> Calibration:
    """The base with ``names`` refitted on ``table`` (shrunk toward the base; module docstring)."""
    from trainscale.calibrate.fit import fit_throughput, round_calibration

    if not names:
        return base
    throughput = [
        p.name for p in parameters(catalogue.framework_keys)
        if p.fitted and p.group == "throughput"
    ]  # fmt: skip
    pinned = {n: base.value(n) for n in throughput if n not in names}
    fit = fit_throughput(
        _data(table), start=base, catalogue=catalogue, pinned=pinned, prior_centre=base,
        prior_scale=1.0 / ROW_LOG_NOISE,
    )  # fmt: skip
    return replace(round_calibration(fit.calibration), intervals=base.intervals)


def _ape(table: pd.DataFrame, calibration: Calibration, catalogue: Catalogue) -> np.ndarray:
    """Absolute % error of tokens/s per GPU of each row under ``calibration``."""
    from trainscale.published.accuracy import throughput_predictions

    rows, _ = throughput_predictions(_data(table), calibration, catalogue)
    return rows["ape_pct"].to_numpy(np.float64)


def choose(scores: dict[str, np.ndarray]) -> tuple[str, float]:
    """The simplest candidate within noise of the best, and the noise margin (percentage points).

    ``scores``: per candidate, in ladder order (simplest first), the per-row absolute % errors on
    the left-out rows. Noise: ``max(SE of the best candidate's errors, NOISE_FLOOR_PCT)``.
    """
    means = {name: float(np.mean(a)) for name, a in scores.items()}
    best = min(means, key=lambda n: (means[n], list(scores).index(n)))
    errors = scores[best]
    se = float(np.std(errors, ddof=1) / math.sqrt(len(errors))) if len(errors) > 1 else 0.0
    noise = max(se, NOISE_FLOOR_PCT)
    chosen = next(n for n in scores if means[n] <= means[best] + noise)
    return chosen, noise


def refit_pilots(
    table: pd.DataFrame, *, base: Calibration, catalogue: Catalogue
) -> tuple[Calibration, PilotReport]:
    """Refit ``base`` on the measured rows ``table`` by the rule of the module docstring.

    ``table``: configuration columns of ``trainscale predict`` plus :data:`MEASURED` (tokens/s per
    GPU), already checked (:func:`trainscale.calibrate.user.read_measurements`); one row or more.
    Returns the refitted calibration (rounded as ``trainscale calibrate`` rounds; its
    ``intervals`` those of ``base``) and the :class:`PilotReport`. Deterministic.
    """
    table = table.reset_index(drop=True)
    candidates = ladder(table, base, catalogue)
    gpus = table["num_gpus"].astype(int)
    largest = int(gpus.max())
    small, large = table[gpus < largest], table[gpus == largest]
    scores: dict[str, np.ndarray] = {}
    if len(small) and len(candidates) > 1:
        for rung, names in candidates.items():
            scores[rung] = _ape(large, _fit(small, names, base, catalogue), catalogue)
        chosen, noise = choose(scores)
    else:
        chosen, noise, largest = "level", float("nan"), 0
        if len(small):  # one candidate: still report its leave-largest-scale-out error
            scores["level"] = _ape(large, _fit(small, candidates["level"], base, catalogue),
                                   catalogue)  # fmt: skip
            largest = int(gpus.max())
    final = _fit(table, candidates[chosen], base, catalogue)
    refitted = tuple(n for n in candidates[chosen] if final.value(n) != base.value(n))
    report = PilotReport(
        refitted=refitted,
        ladder=pd.DataFrame(
            {
                "rung": list(candidates),
                "parameters": [", ".join(v) for v in candidates.values()],
                "llso_mape_pct": [
                    float(np.mean(scores[r])) if r in scores else float("nan") for r in candidates
                ],
                "chosen": [r == chosen for r in candidates],
            }
        ),
        chosen=chosen,
        noise_pct=noise,
        largest_gpus=largest,
        in_sample_mape_pct=float(np.mean(_ape(table, final, catalogue))),
        shipped_mape_pct=float(np.mean(_ape(table, base, catalogue))),
        candidates=candidates,
    )
    return final, report


#: A parameter is refitted only if moving it by this share of its bound range changes some
#: measured row's prediction by more than :data:`_SENSITIVITY` (log).
_STEP = 0.1
_SENSITIVITY = 1e-3


def sensitive_parameters(
    table: pd.DataFrame, base: Calibration, names: tuple[str, ...], catalogue: Catalogue
) -> list[str]:
    """The parameters of ``names`` some row of ``table`` responds to: moving one by
    :data:`_STEP` of its bound range changes some row's predicted log tokens/s per GPU by more
    than :data:`_SENSITIVITY` (simulated under ``catalogue``, from ``base``)."""
    from trainscale.sim.configs import build_configs
    from trainscale.sim.throughput import throughput_per_gpu

    configs, _, _ = build_configs(
        table, hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.frameworks,
    )  # fmt: skip
    reference = np.log(throughput_per_gpu(configs, base, catalogue))
    kept = []
    for name in names:
        spec = parameter_spec(name)
        value = base.value(name)
        step = _STEP * (spec.upper - spec.lower)
        moved = value + step if value + step <= spec.upper else value - step
        changed = np.log(throughput_per_gpu(configs, replace(base, **{name: moved}), catalogue))
        if np.max(np.abs(changed - reference)) > _SENSITIVITY:
            kept.append(name)
    return kept
