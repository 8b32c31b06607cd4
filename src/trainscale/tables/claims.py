"""Table ``claims``: the study's headline numbers, reproduced with the study setup.

Each claim of Fernandez et al. (2024) is recomputed with :mod:`trainscale.paper.setup` (sequence
4,096, global batch 2,048 sequences, micro-batch 2 per GPU, PyTorch FSDP, no recomputation,
H100 on the study's own cluster as its nccl-tests figure shows it; the MFU comparison at 128
GPUs) and checked against the study's value with a stated tolerance. :func:`reproduce_claims`
runs the simulator; :func:`claims_table` only compares, so it can be checked with any numbers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.paper.setup import (
    STUDY_BEST_DEGREE,
    STUDY_MFU_PCT,
    STUDY_POWER_DROP_PCT,
    STUDY_THROUGHPUT_DROP_PCT,
)
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

#: ``check`` of a claim the simulator reproduces without having been fitted to it.
REPRODUCED = "reproduced (not fitted to this claim)"

_FSDP_SETUP = (
    "Llama-2 7B, PyTorch FSDP, H100 SXM 80GB on the study's cluster (fernandez-h100: 8 GPUs and "
    "8 x 400 Gb/s per node, inferred from its nccl-tests figure), seq 4,096, global batch "
    "2,048 sequences, micro-batch 2 per GPU (1 where the local batch is 1), no recomputation"
)
_A100_SETUP = (
    "Llama-2 7B, PyTorch FSDP, A100 SXM 80GB (DGX A100, 200 Gb/s per GPU), seq 4,096, global "
    "batch 2,048 sequences, micro-batch 2 per GPU, no recomputation"
)
_MP_SETUP = (
    "2,048 H100 GPUs; FSDP plans only, as the study compares them (full sharding across the "
    "data-parallel replicas; HSDP and DDP are not candidates, so table best_plans, which also "
    "tries HSDP, can pick another plan); tp in 1-8, pp in 1-16 with tp*pp <= 16, no or full "
    "recomputation, micro-batch 2 per GPU or the local batch if smaller; best = highest "
    "tokens/s that fits in memory"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One claim of the study and how it is checked."""

    key: str
    """Name of the reproduced value in :func:`reproduce_claims`' result."""
    claim: str
    """What the study says, in words."""
    study_value: float | tuple[float, float]
    """The study's number, or the range it gives (inclusive)."""
    unit: str
    tolerance: float | None
    """Allowed absolute difference (in ``unit``) for a number; None for a range."""
    setup: str
    fitted_to: str | None = None
    """The calibrated parameter that was solved to reproduce this very claim (then agreement is
    by construction, not a test), or None."""

    @property
    def study_text(self) -> str:
        if isinstance(self.study_value, tuple):
            return f"{self.study_value[0]:g}–{self.study_value[1]:g}"
        return f"{self.study_value:g}"

    @property
    def check_text(self) -> str:
        if self.fitted_to is None:
            return REPRODUCED
        return (
            f"calibration target: {self.fitted_to} is fitted to this value, "
            "so it agrees by construction"
        )

    @property
    def tolerance_text(self) -> str:
        if self.tolerance is None:
            return f"within {self.study_text}"
        return f"±{self.tolerance:g} points" if self.unit == "%" else f"±{self.tolerance:g}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` agrees with the study within the tolerance (False for NaN)."""
        if pd.isna(value):
            return False
        if isinstance(self.study_value, tuple):
            low, high = self.study_value
            return bool(low <= value <= high)
        return bool(abs(value - self.study_value) <= self.tolerance)


#: The claims, in table order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        key="throughput_drop_pct",
        unit="%",
        study_value=STUDY_THROUGHPUT_DROP_PCT,
        tolerance=5.0,
        claim="Drop of tokens/s per GPU from 128 to 2,048 GPUs",
        setup=_FSDP_SETUP,
    ),
    Claim(
        key="power_drop_pct",
        unit="%",
        study_value=STUDY_POWER_DROP_PCT,
        tolerance=2.0,
        claim="Drop of power per GPU from 128 to 2,048 GPUs (calibration target, not a test)",
        setup=_FSDP_SETUP,
        fitted_to="power_comm_frac",
    ),
    Claim(
        key="mfu_a100_pct",
        unit="%",
        study_value=STUDY_MFU_PCT["a100-sxm-80gb"],
        tolerance=5.0,
        claim="MFU on A100 at 128 GPUs",
        setup=_A100_SETUP,
    ),
    Claim(
        key="mfu_h100_pct",
        unit="%",
        study_value=STUDY_MFU_PCT["h100-sxm-80gb"],
        tolerance=5.0,
        claim="MFU on H100 at 128 GPUs",
        setup=_FSDP_SETUP,
    ),
    Claim(
        key="best_degree_llama2_7b",
        unit="tp*pp",
        study_value=tuple(float(d) for d in STUDY_BEST_DEGREE),
        tolerance=None,
        claim="Model-parallel degree (tp*pp) of the best FSDP plan at 2,048 GPUs, Llama-2 7B",
        setup=_MP_SETUP,
    ),
    Claim(
        key="best_degree_llama2_70b",
        unit="tp*pp",
        study_value=tuple(float(d) for d in STUDY_BEST_DEGREE),
        tolerance=None,
        claim="Model-parallel degree (tp*pp) of the best FSDP plan at 2,048 GPUs, Llama-2 70B",
        setup=_MP_SETUP,
    ),
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
