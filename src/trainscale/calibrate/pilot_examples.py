"""A published source as a user's cluster: calibrate on its small runs, predict its large ones.

:func:`scale_check` is the worked example of ``docs/simulator/calibration.md`` (a user with the
8-GPU runs of one source predicts its largest runs) and the llm-foundry check (calibrate on
its 64-256-GPU rows, predict its 512-GPU rows), :data:`EXAMPLES`. Run them with
``python -m trainscale.calibrate.pilot_examples``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.calibrate.pilot import MEASURED
from trainscale.errors import InputFileError

if TYPE_CHECKING:
    from trainscale.published.measurements import PublishedData
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["EXAMPLES", "scale_check"]

#: (citation, pilot GPU range, target GPUs or None for the largest, source-out base) of the
#: worked example and the llm-foundry check (``python -m trainscale.calibrate.user``).
EXAMPLES = (
    ("torchtitan benchmarks (PyTorch team, Dec 2024)", (8, 8), None, True),
    ("MosaicML llm-foundry MPT training benchmarks", (64, 256), 512, False),
    ("MosaicML llm-foundry MPT training benchmarks", (64, 256), 512, True),
)


def _rows(published: PublishedData, rows: pd.DataFrame) -> PublishedData:
    from trainscale.published.measurements import PublishedData

    return PublishedData(
        throughput=rows.reset_index(drop=True), collectives=published.collectives.iloc[0:0],
        rejects=published.rejects,
    )  # fmt: skip


def _table(predicted: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The target rows of :func:`scale_check` from each calibration's predictions."""
    pilot = predicted["pilot"]
    kinds = (("predicted", "tokens_per_s_per_gpu"), ("error_pct", "error_pct"))
    table = pd.DataFrame(
        {
            "csv_row": pilot["csv_row"], "model_name": pilot["model_name"],
            "num_gpus": pilot["num_gpus"], "observed": pilot["observed_tokens_per_s_per_gpu"],
            **{
                f"{name}_{column}": frame[key]
                for name, frame in predicted.items()
                for column, key in kinds
            },
            "pilot_lo": pilot["tokens_per_s_per_gpu_lo"],
            "pilot_hi": pilot["tokens_per_s_per_gpu_hi"],
        }
    )  # fmt: skip
    return table


def scale_check(
    citation: str,
    *,
    published: PublishedData,
    shipped: Calibration,
    catalogue: Catalogue,
    pilot_gpus: tuple[int, int],
    target_gpus: int | None = None,
    source_out: bool = True,
    errors: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, dict[str, object]]:
    """Calibrate on ``citation``'s rows with ``pilot_gpus[0] <= num_gpus <= pilot_gpus[1]``;
    predict its rows at ``target_gpus`` (default: its largest GPU count).

    ``source_out``: the base is the calibration fitted without the source (a cluster the model
    never saw; :func:`trainscale.calibrate.pilot_series.base_without`), else ``shipped`` (as the
    issue's check did). The pilot interval model is fitted on the published series errors of the
    *other* sources (``errors``: :func:`~trainscale.calibrate.pilot_series.pilot_errors`,
    computed when not given). Returns the target rows (``csv_row``, ``model_name``, ``num_gpus``,
    ``observed``, ``shipped_predicted``/``_error_pct`` (the shipped calibration, fitted on every
    source including this one), ``base_predicted``/``_error_pct``, ``pilot_predicted``/
    ``_error_pct``, ``pilot_lo``, ``pilot_hi``) and a summary (``rows_fitted``,
    ``rows_predicted``, ``shipped_mape_pct``, ``base_mape_pct``, ``pilot_mape_pct``,
    ``covered_pct``, ``chosen``, ``refitted``).
    """
    from trainscale.calibrate.pilot_series import base_without, pilot_errors
    from trainscale.calibrate.user import calibrate_user
    from trainscale.published.accuracy import throughput_predictions

    usable, _ = throughput_predictions(published, shipped, catalogue)
    rows = published.throughput
    rows = rows[(rows["citation"] == citation) & rows["csv_row"].isin(usable["csv_row"])]
    if rows.empty:
        raise InputFileError("data/published/measurements.csv", f"no source {citation!r}")
    low, high = pilot_gpus
    pilots = rows[(rows["num_gpus"] >= low) & (rows["num_gpus"] <= high)]
    target = int(rows["num_gpus"].max()) if target_gpus is None else target_gpus
    targets = rows[rows["num_gpus"] == target]
    if pilots.empty or targets.empty:
        raise InputFileError(
            "data/published/measurements.csv",
            f"{citation!r} has {len(pilots)} row(s) at {low}-{high} GPUs and {len(targets)} at "
            f"{target}; both must be non-empty",
        )
    base = base_without(published, citation, catalogue=catalogue, shipped=shipped)
    base = base if source_out else shipped
    if errors is None:
        errors = pilot_errors(published, catalogue=catalogue, shipped=shipped)
    table = pilots.rename(columns={"observed_tokens_per_s_per_gpu": MEASURED})
    user = calibrate_user(
        Path(f"{citation} ({low}-{high} GPUs)"), base=base, published=published,
        catalogue=catalogue, table=table,
        pilot_errors=errors[errors["citation"] != citation],
    )  # fmt: skip
    data = _rows(published, targets)
    predicted = {
        name: throughput_predictions(data, calibration, catalogue)[0]
        for name, calibration in (
            ("shipped", shipped), ("base", base), ("pilot", user.calibration),
        )
    }  # fmt: skip
    table = _table(predicted)
    covered = (table["observed"] >= table["pilot_lo"]) & (table["observed"] <= table["pilot_hi"])
    summary: dict[str, object] = {
        "rows_fitted": len(pilots),
        "rows_predicted": len(table),
        **{f"{n}_mape_pct": float(f["ape_pct"].mean()) for n, f in predicted.items()},
        "covered_pct": float(100.0 * np.mean(covered)),
        "chosen": user.report.chosen,
        "refitted": ", ".join(user.report.refitted),
    }
    return table, summary


if (
    __name__ == "__main__"
):  # docs/simulator/calibration.md: python -m trainscale.calibrate.pilot_examples
    from trainscale.calibrate.pilot_series import pilot_errors
    from trainscale.published.measurements import load_published
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue

    shipped_catalogue = load_catalogue()  # the shipped catalogues and data, loaded once here
    shipped_published = load_published(
        hardware=shipped_catalogue.hardware, models=shipped_catalogue.models,
        frameworks=shipped_catalogue.framework_keys,
    )  # fmt: skip
    shipped_calibration = load_calibration(frameworks=shipped_catalogue.framework_keys)
    published_errors = pilot_errors(
        shipped_published, catalogue=shipped_catalogue, shipped=shipped_calibration
    )
    for name, gpus, target, out in EXAMPLES:
        rows, numbers = scale_check(
            name, published=shipped_published, shipped=shipped_calibration,
            catalogue=shipped_catalogue, pilot_gpus=gpus, target_gpus=target, source_out=out,
            errors=published_errors,
        )  # fmt: skip
        with pd.option_context("display.width", 250, "display.max_columns", None):
            kind = "fitted without the source" if out else "the shipped calibration"
            print(f"{name}: pilots at {gpus[0]}-{gpus[1]} GPUs, base {kind}")
            print(rows.round(2).to_string(index=False))
            print({k: round(v, 2) if isinstance(v, float) else v for k, v in numbers.items()})
