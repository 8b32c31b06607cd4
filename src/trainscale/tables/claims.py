"""Table ``claims``: the study's headline numbers, reproduced with the study setup.

Each claim of Fernandez et al. (2024) is recomputed with :mod:`trainscale.paper.setup` (sequence
4,096, global batch 2,048 sequences, micro-batch 2 per GPU, PyTorch FSDP, no recomputation,
H100 on the study's own cluster as its nccl-tests figure shows it; the MFU comparison at 128
GPUs) and checked against the study's value with a stated tolerance. :func:`reproduce_claims`
runs the simulator; :func:`claims_table` only compares, so it can be checked with any numbers.
The claims and their tolerances are :data:`trainscale.paper.values.CLAIMS`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.paper.values import CLAIMS, REPRODUCED, Claim
from trainscale.sim.calibration import Calibration

__all__ = [
    "CLAIMS",
    "CLAIMS_COLUMNS",
    "REPRODUCED",
    "Claim",
    "claims_table",
    "render",
    "reproduce_claims",
    "value_text",
]

#: Columns of :func:`claims_table`, in order.
CLAIMS_COLUMNS: tuple[str, ...] = (
    "claim",
    "study_value",
    "study_range",
    "reproduced_value",
    "unit",
    "tolerance",
    "holds",
    "check",
    "setup",
)


def reproduce_claims(calibration: Calibration | None = None) -> dict[str, float]:
    """Recompute every claim's value with the study setup (:mod:`trainscale.paper.setup`)."""
    from trainscale.paper import setup as study_setup

    best = {
        model: study_setup.best_model_parallel(model, 2048, calibration)
        for model in ("llama2-7b", "llama2-70b")
    }
    return {
        **study_setup.headline_claims(calibration),
        **{
            f"best_degree_{model.replace('-', '_')}": (
                float(frame["model_parallel"].iloc[0]) if len(frame) else float("nan")
            )
            for model, frame in best.items()
        },
    }


def claims_table(
    reproduced: Mapping[str, float], claims: tuple[Claim, ...] = CLAIMS
) -> pd.DataFrame:
    """Compare reproduced values with the study's.

    Parameters
    ----------
    reproduced : mapping
        Claim key → reproduced value (as :func:`reproduce_claims` returns); every claim's key
        must be present.
    claims : tuple of Claim
        The claims to check (default :data:`CLAIMS`).

    Returns
    -------
    pandas.DataFrame
        :data:`CLAIMS_COLUMNS`: ``claim``; ``study_value`` (float: the study's number, NaN where
        it gives a range); ``study_range`` (text such as ``2–4``, missing for a number);
        ``reproduced_value`` (float); ``unit``; ``tolerance`` (text); ``holds`` (bool: the
        reproduced value is within the tolerance of, or inside, the study's value); ``check``
        (:data:`REPRODUCED`, or which calibrated parameter was fitted to the claim);
        ``setup``.
    """
    missing = [c.key for c in claims if c.key not in reproduced]
    if missing:
        raise TrainscaleError(f"claims_table: no reproduced value for {missing}")
    rows = [
        {
            "claim": c.claim,
            "study_value": (
                float("nan") if isinstance(c.study_value, tuple) else float(c.study_value)
            ),
            "study_range": c.study_text if isinstance(c.study_value, tuple) else None,
            "reproduced_value": float(reproduced[c.key]),
            "unit": c.unit,
            "tolerance": c.tolerance_text,
            "holds": c.holds(float(reproduced[c.key])),
            "check": c.check_text,
            "setup": c.setup,
        }
        for c in claims
    ]
    return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS)).astype(
        {"holds": "bool", "study_range": "string"}
    )


def value_text(value: float) -> str:
    """Display of a claim's number: an integer (a model-parallel degree) without decimals,
    anything else with two."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def render(
    stem: str | os.PathLike[str], *, calibration: Calibration | None = None
) -> tuple[Path, ...]:
    """Reproduce the claims and write ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table
    from trainscale.sim.calibration import load_calibration

    calibration = calibration or load_calibration()
    table = claims_table(reproduce_claims(calibration))
    return write_table(
        table,
        stem,
        label="tab:claims",
        caption="The study's claims (Fernandez et al. 2024) against the simulator "
        f"(trainscale calibration {calibration.calibration_id}) with the study setup. "
        "The power drop is a calibration target (power\\_comm\\_frac is fitted to it), not a "
        "reproduction; the model-parallel claims compare FSDP plans only.",
        float_format={"study_value": value_text, "reproduced_value": value_text},
    )
