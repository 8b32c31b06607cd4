"""The paper setup's energy bill: tokens per joule and cost per token against GPU count, node
scope, beside the metered runs (``results/paper/energy.parquet``, figure ``energy_bill``).

Simulated rows: Llama-2 7B with FSDP on H100 at the paper setup (:mod:`trainscale.paper.setup`),
8 to 2,048 GPUs, with node power (:func:`trainscale.sim.energy.with_node_power`, the shipped
power terms) and its interval. Metered rows: each LLM run of
``data/published/power-measurements.csv`` at its own GPU count and workload (another model and
plan than the paper setup, so a level to compare with, not a point of the curve), with its
measured node energy per token and whole-run throughput, and the simulator's prediction of the
same run beside it (its whole timed window, evaluations included where the benchmark's rules are
known: :func:`trainscale.calibrate.power.run_throughput`). Cost per million tokens prices
GPU-hours only: ``usd_per_gpu_hour`` divided by tokens per GPU-hour, times 10^6.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.calibrate.power import power_predictions
from trainscale.paper.setup import paper_configurations
from trainscale.published.power_rows import PowerRows
from trainscale.schema import ENERGY_BILL_COLUMNS, names
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.energy import PowerTerms, with_node_power
from trainscale.sim.simulate import predict

__all__ = ["FIGURE_USD_PER_GPU_HOUR", "energy_table", "usd_per_million_tokens"]

#: The GPU-hour price of the default target's table and figure: an illustrative on-demand H100
#: price (cost per token scales linearly with it; ``predict --usd-per-gpu-hour`` takes any).
FIGURE_USD_PER_GPU_HOUR = 2.5


def usd_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: object) -> np.ndarray:
    """GPU-hour price over tokens per GPU-hour, per million tokens."""
    return usd_per_gpu_hour * 1e6 / (3600.0 * np.asarray(tokens_per_s_per_gpu, np.float64))


def _simulated(calibration: Calibration, terms: PowerTerms, catalogue: Catalogue,
               usd: float) -> pd.DataFrame:  # fmt: skip
    configs = paper_configurations(catalogue=catalogue, calibration=calibration)
    result = with_node_power(
        predict(configs, catalogue=catalogue, calibration=calibration), catalogue.hardware, terms
    )
    per_gpu = result["tokens_per_s_per_gpu"]
    return pd.DataFrame({
        "source": "sim", "workload": "Llama-2 7B, FSDP, paper setup",
        "num_gpus": result["num_gpus"], "tokens_per_s_per_gpu": per_gpu,
        "energy_j_per_token_node": result["energy_j_per_token_node"],
        "energy_j_per_token_node_lo": result["energy_j_per_token_node_lo"],
        "energy_j_per_token_node_hi": result["energy_j_per_token_node_hi"],
        "usd_per_million_tokens": usd_per_million_tokens(usd, per_gpu),
        "usd_per_million_tokens_lo": usd_per_million_tokens(usd, result["tokens_per_s_per_gpu_hi"]),
        "usd_per_million_tokens_hi": usd_per_million_tokens(usd, result["tokens_per_s_per_gpu_lo"]),
        "predicted_energy_j_per_token_node": np.nan,
        "predicted_usd_per_million_tokens": np.nan,
    })  # fmt: skip


def _metered(rows: PowerRows, calibration: Calibration, terms: PowerTerms,
             catalogue: Catalogue, usd: float) -> pd.DataFrame:  # fmt: skip
    energy = rows.rows[rows.rows["metric"].eq("energy_j_per_token")].reset_index(drop=True)
    predicted = power_predictions(energy, calibration, catalogue, terms)
    measured = energy["measured_tokens_per_s_per_gpu"].to_numpy(np.float64)
    nan = np.full(len(energy), np.nan)
    return pd.DataFrame({
        "source": "measured",
        "workload": [f"{w}, {n} GPUs ({s})" for w, n, s in
                     zip(energy["workload"], energy["num_gpus"], energy["system"], strict=True)],
        "num_gpus": energy["num_gpus"], "tokens_per_s_per_gpu": measured,
        "energy_j_per_token_node": energy["observed"], "energy_j_per_token_node_lo": nan,
        "energy_j_per_token_node_hi": nan,
        "usd_per_million_tokens": usd_per_million_tokens(usd, measured),
        "usd_per_million_tokens_lo": nan, "usd_per_million_tokens_hi": nan,
        "predicted_energy_j_per_token_node": predicted["predicted"],
        "predicted_usd_per_million_tokens": usd_per_million_tokens(
            usd, predicted["run_tokens_per_s_per_gpu"]),
    })  # fmt: skip


def energy_table(
    calibration: Calibration,
    terms: PowerTerms,
    *,
    catalogue: Catalogue,
    power_rows: PowerRows,
    usd_per_gpu_hour: float,
) -> pd.DataFrame:
    """The simulated paper setup and the metered runs, columns ``ENERGY_BILL_COLUMNS``."""
    table = pd.concat(
        [_simulated(calibration, terms, catalogue, usd_per_gpu_hour),
         _metered(power_rows, calibration, terms, catalogue, usd_per_gpu_hour)],
        ignore_index=True,
    )  # fmt: skip
    table["tokens_per_joule_node"] = 1.0 / table["energy_j_per_token_node"]
    table["usd_per_gpu_hour"] = float(usd_per_gpu_hour)
    table["calibration_id"] = calibration.calibration_id
    table["power_id"] = terms.power_id
    return table[names(ENERGY_BILL_COLUMNS)]
