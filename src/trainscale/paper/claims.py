"""The paper's claims, reproduced with the paper setup: ``results/paper/claims.parquet``.

Each claim of Fernandez et al. (2024) (:data:`trainscale.paper.values.CLAIMS`) is recomputed
with :mod:`trainscale.paper.setup` (sequence 4,096, global batch 2,048 sequences, micro-batch 2
per GPU, PyTorch FSDP, no recomputation, H100 on the paper's own cluster as its nccl-tests
figure shows it; the MFU comparison at 128 GPUs) and checked against the paper's value with a
stated tolerance. :func:`reproduce_claims` runs the simulator; :func:`claims_table` only
compares, so it can be checked with any numbers; :func:`claim_rows` is both, with provenance,
as the workflow's rule ``paper_claims`` writes it (columns
:data:`trainscale.schema.CLAIM_COLUMNS`), for table ``claims`` to print.

Every row says what it rests on: ``assumptions`` (the names a claim lists in
:attr:`~trainscale.paper.values.Claim.assumptions`, in words from
:data:`~trainscale.paper.values.ASSUMPTIONS`) and ``reproduced_min``/``reproduced_max``, the
range of the value over the alternatives actually simulated: the profile of
``nccl_latency_scale`` (``results/paper/claim_sensitivity.parquet``,
:func:`trainscale.paper.sensitivity.claim_sensitivity`) and, for the throughput drop, the global
batches of :data:`~trainscale.paper.values.GLOBAL_BATCH_ALTERNATIVES`. A claim no alternative
was simulated for has min = max = its value and ``range_over`` says so. ``note`` of the throughput
drop names the doubling of the GPU count where the drop happens
(:func:`trainscale.paper.doubling.steepest_doubling`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.paper import setup as paper_setup
from trainscale.paper.doubling import steepest_doubling
from trainscale.paper.values import (
    CLAIMS,
    GLOBAL_BATCH_ALTERNATIVES,
    PAPER_CLAIM_FROM,
    PAPER_CLAIM_TO,
    PAPER_GLOBAL_BATCH,
    PAPER_GPU_COUNTS,
    Claim,
)
from trainscale.schema import CLAIM_COLUMNS, names
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.version import __version__

__all__ = [
    "batch_alternatives",
    "claim_ranges",
    "claim_rows",
    "claims_table",
    "drop_note",
    "reproduce_claims",
]

_PROVENANCE = ("calibration_id", "simulator_version")


def reproduce_claims(calibration: Calibration, *, catalogue: Catalogue) -> dict[str, float]:
    """Recompute every claim's value with the paper setup (:mod:`trainscale.paper.setup`) under
    the caller's ``calibration`` and ``catalogue``."""
    best = {
        model: paper_setup.best_model_parallel(model, 2048, calibration, catalogue=catalogue)
        for model in ("llama2-7b", "llama2-70b")
    }
    return {
        **paper_setup.headline_claims(calibration, catalogue=catalogue),
        **{
            f"best_degree_{model.replace('-', '_')}": (
                float(frame["model_parallel"].iloc[0]) if len(frame) else float("nan")
            )
            for model, frame in best.items()
        },
    }


def claims_table(
    reproduced: Mapping[str, float],
    claims: tuple[Claim, ...] = CLAIMS,
    *,
    ranges: Mapping[str, tuple[float, float, str]] | None = None,
    notes: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Compare reproduced values with the paper's.

    Parameters
    ----------
    reproduced : mapping
        Claim key → reproduced value (as :func:`reproduce_claims` returns); every claim's key
        must be present.
    ranges : mapping, optional
        Claim key → ``(min, max, what they span)`` (:func:`claim_ranges`); a claim without one
        gets min = max = its value and ``range_over`` "no alternative simulated".
    notes : mapping, optional
        Claim key → text of column ``note`` (:func:`drop_note`); null for the others.
    claims : tuple of Claim
        The claims to check (default :data:`~trainscale.paper.values.CLAIMS`).

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.CLAIM_COLUMNS` but the provenance: the claim's ``key``;
        ``claim``; ``paper_value`` (float: the paper's number, NaN where
        it gives a range); ``paper_range`` (text such as ``2–4``, missing for a number);
        ``reproduced_value`` (float); ``unit``; ``tolerance`` (text); ``holds`` (bool: the
        reproduced value is within the tolerance of, or inside, the paper's value); ``check``
        (:data:`~trainscale.paper.values.REPRODUCED`, or which calibrated parameter was fitted
        to the claim); ``setup``; ``assumptions``; ``reproduced_min``, ``reproduced_max`` and
        ``range_over``; ``note``.
    """
    missing = [c.key for c in claims if c.key not in reproduced]
    if missing:
        raise TrainscaleError(f"claims_table: no reproduced value for {missing}")
    ranges = ranges or {}
    notes = notes or {}
    none = "no alternative simulated"
    rows = [
        {
            "key": c.key,
            "claim": c.claim,
            "paper_value": (
                float("nan") if isinstance(c.paper_value, tuple) else float(c.paper_value)
            ),
            "paper_range": c.study_text if isinstance(c.paper_value, tuple) else None,
            "reproduced_value": float(reproduced[c.key]),
            "unit": c.unit,
            "tolerance": c.tolerance_text,
            "holds": c.holds(float(reproduced[c.key])),
            "check": c.check_text,
            "setup": c.setup,
            "assumptions": c.assumptions_text,
            "reproduced_min": float(ranges.get(c.key, (reproduced[c.key],) * 2 + (none,))[0]),
            "reproduced_max": float(ranges.get(c.key, (reproduced[c.key],) * 2 + (none,))[1]),
            "range_over": ranges.get(c.key, (0.0, 0.0, none))[2],
            "note": notes.get(c.key),
        }
        for c in claims
    ]
    columns = [name for name in names(CLAIM_COLUMNS) if name not in _PROVENANCE]
    return pd.DataFrame(rows, columns=columns).astype(
        {"holds": "bool", "paper_range": "string", "note": "string"}
    )


def batch_alternatives(calibration: Calibration, *, catalogue: Catalogue) -> dict[int, float]:
    """The throughput drop (%, 128 → 2,048 GPUs) at each global batch of
    :data:`~trainscale.paper.values.GLOBAL_BATCH_ALTERNATIVES` (sequences → percent)."""
    return {
        batch: paper_setup.throughput_drop_pct(calibration, catalogue=catalogue, global_batch=batch)
        for batch in GLOBAL_BATCH_ALTERNATIVES
    }


def claim_ranges(
    reproduced: Mapping[str, float],
    sensitivity: pd.DataFrame,
    batches: Mapping[int, float],
) -> dict[str, tuple[float, float, str]]:
    """Claim key → ``(min, max, what they span)`` over the alternatives simulated.

    ``sensitivity`` is ``results/paper/claim_sensitivity.parquet`` (one column per headline
    claim, one row per pinned ``nccl_latency_scale``); ``batches`` maps a global batch to the
    throughput drop there (:func:`batch_alternatives`). The reproduced value is always inside.
    """
    scales = sensitivity["nccl_latency_scale"]
    latency = f"nccl_latency_scale {scales.min():g}-{scales.max():g} (refitted)"
    ranges = {}
    for key, value in reproduced.items():
        values = [float(value)]
        over = []
        if key in sensitivity.columns:
            values += [float(v) for v in sensitivity[key]]
            over.append(latency)
        if key == "throughput_drop_pct" and batches:
            values += [float(v) for v in batches.values()]
            over.append(
                "global batch "
                + ", ".join(f"{b:,}" for b in (PAPER_GLOBAL_BATCH, *batches))
                + " sequences"
            )
        if over:
            ranges[key] = (min(values), max(values), "; ".join(over))
    return ranges


def drop_note(
    calibration: Calibration, *, catalogue: Catalogue, batches: Mapping[int, float]
) -> str:
    """Where the reproduced throughput drop happens: the doubling of the GPU count between 128
    and 2,048 with the largest per-GPU drop, the drop before it, and the drop at the other global
    batches (``batches``, :func:`batch_alternatives`)."""
    counts = tuple(n for n in PAPER_GPU_COUNTS if PAPER_CLAIM_FROM <= n <= PAPER_CLAIM_TO)
    frame = paper_setup.scaleout(calibration, catalogue=catalogue, gpu_counts=counts)
    steep = steepest_doubling(frame, "tokens_per_s_per_gpu")
    by_n = frame.set_index("num_gpus")["tokens_per_s_per_gpu"]
    before = 100.0 * (1.0 - by_n[steep.n_from] / by_n[PAPER_CLAIM_FROM])
    local = PAPER_GLOBAL_BATCH // steep.n_to
    others = ", ".join(f"{drop:.2f} % at {batch:,}" for batch, drop in batches.items())
    return (
        f"largest drop in one doubling {steep.text} (local batch {local} sequence"
        f"{'s' if local != 1 else ''}); {PAPER_CLAIM_FROM:,}→{steep.n_from:,}: "
        f"−{before:.2f} %. The shape is a prediction resting on the global batch of "
        f"{PAPER_GLOBAL_BATCH:,} sequences: the {PAPER_CLAIM_FROM:,}→{PAPER_CLAIM_TO:,} drop "
        f"is {others} sequences"
    )


def claim_rows(
    calibration: Calibration, *, catalogue: Catalogue, sensitivity: pd.DataFrame
) -> pd.DataFrame:
    """Reproduce the claims under ``calibration`` and ``catalogue`` and compare them with the
    paper's; ``sensitivity`` is the ``nccl_latency_scale`` profile
    (``results/paper/claim_sensitivity.parquet``) the ranges are taken from.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.CLAIM_COLUMNS`: the columns of :func:`claims_table` and the
        ``calibration_id`` and ``simulator_version`` that reproduced them; one row per claim,
        in :data:`~trainscale.paper.values.CLAIMS` order.
    """
    reproduced = reproduce_claims(calibration, catalogue=catalogue)
    batches = batch_alternatives(calibration, catalogue=catalogue)
    table = claims_table(
        reproduced,
        ranges=claim_ranges(reproduced, sensitivity, batches),
        notes={"throughput_drop_pct": drop_note(calibration, catalogue=catalogue, batches=batches)},
    )
    table["calibration_id"] = calibration.calibration_id
    table["simulator_version"] = __version__
    return table[names(CLAIM_COLUMNS)]
