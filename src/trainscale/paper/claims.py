"""The paper's claims, reproduced with the paper setup: ``results/paper/claims.parquet``.

Each claim of Fernandez et al. (2024) (:data:`trainscale.paper.values.CLAIMS`) is recomputed
with :mod:`trainscale.paper.setup` (sequence 4,096, global batch 2,048 sequences, micro-batch 2
per GPU, PyTorch FSDP, no recomputation, H100 on the paper's own cluster as its nccl-tests
figure shows it; the MFU comparison at 128 GPUs) and checked against the paper's value with a
stated tolerance. :func:`reproduce_claims` runs the simulator; :func:`claims_table` only
compares, so it can be checked with any numbers; :func:`claim_rows` is both, with provenance,
as the workflow's rule ``paper_claims`` writes it (columns
:data:`trainscale.schema.CLAIM_COLUMNS`), for table ``claims`` to print.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.paper import setup as paper_setup
from trainscale.paper.values import CLAIMS, Claim
from trainscale.schema import CLAIM_COLUMNS, names
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.version import __version__

__all__ = ["claim_rows", "claims_table", "reproduce_claims"]

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
    reproduced: Mapping[str, float], claims: tuple[Claim, ...] = CLAIMS
) -> pd.DataFrame:
    """Compare reproduced values with the paper's.

    Parameters
    ----------
    reproduced : mapping
        Claim key → reproduced value (as :func:`reproduce_claims` returns); every claim's key
        must be present.
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
        to the claim); ``setup``.
    """
    missing = [c.key for c in claims if c.key not in reproduced]
    if missing:
        raise TrainscaleError(f"claims_table: no reproduced value for {missing}")
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
        }
        for c in claims
    ]
    columns = [name for name in names(CLAIM_COLUMNS) if name not in _PROVENANCE]
    return pd.DataFrame(rows, columns=columns).astype({"holds": "bool", "paper_range": "string"})


def claim_rows(calibration: Calibration, *, catalogue: Catalogue) -> pd.DataFrame:
    """Reproduce the claims under ``calibration`` and ``catalogue`` and compare them with the
    paper's.

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.CLAIM_COLUMNS`: the columns of :func:`claims_table` and the
        ``calibration_id`` and ``simulator_version`` that reproduced them; one row per claim,
        in :data:`~trainscale.paper.values.CLAIMS` order.
    """
    table = claims_table(reproduce_claims(calibration, catalogue=catalogue))
    table["calibration_id"] = calibration.calibration_id
    table["simulator_version"] = __version__
    return table[names(CLAIM_COLUMNS)]
