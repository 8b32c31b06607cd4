"""Table ``claims``: the paper's headline numbers, reproduced with the paper setup.

Prints ``results/paper/claims.parquet`` (rule ``paper_claims``,
:func:`trainscale.paper.claims.claim_rows`): each claim of Fernandez et al. (2024) recomputed
with the paper setup (:mod:`trainscale.paper.setup`) and checked against the paper's value with
a stated tolerance. Nothing is simulated here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.report.select import require
from trainscale.schema import CLAIM_COLUMNS, CLAIMS_TABLE_COLUMNS, names

__all__ = ["render", "value_text"]


def value_text(value: float) -> str:
    """Display of a claim's number: an integer (a model-parallel degree) without decimals,
    anything else with two."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"


def render(stem: str | os.PathLike[str], claims: pd.DataFrame) -> tuple[Path, ...]:
    """Write ``claims`` (``results/paper/claims.parquet``) as ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    require(claims, names(CLAIM_COLUMNS), where="claims")
    table = claims[names(CLAIMS_TABLE_COLUMNS)].astype(
        {"holds": "bool", "paper_range": "string", "note": "string"}
    )
    calibrations = ", ".join(sorted({str(c) for c in claims["calibration_id"]}))
    return write_table(
        table,
        stem,
        label="tab:claims",
        caption="The paper's claims (Fernandez et al. 2024) against the simulator "
        f"(trainscale calibration {calibrations}) with the paper setup. "
        "The power drop is a prediction from sourced power fractions (no parameter is fitted "
        "to it); node power is validated on metered runs (docs/accuracy.md); the "
        "model-parallel claims compare FSDP plans only. Column assumptions "
        "names what each value rests on; reproduced\\_min/max its range over the alternatives "
        "simulated (range\\_over).",
        float_format={
            name: value_text
            for name in ("paper_value", "reproduced_value", "reproduced_min", "reproduced_max")
        },
    )
