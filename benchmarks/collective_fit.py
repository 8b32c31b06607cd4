"""Fit only the network parameters to every nccl-tests row and report the error per source.

    python benchmarks/collective_fit.py

Bounded robust least squares (scipy ``least_squares``, trust-region reflective, soft_l1 loss with
scale 0.1 as in :mod:`trainscale.calibrate.fit`) on log(pred/obs), each
source weighted equally (weight 1/rows of that source, as a residual weight of 1/sqrt(rows)),
with the calibration's weak Gaussian prior on each parameter (its default, standard deviation
half its bound range, as in :mod:`trainscale.calibrate.fit`; the weights are scaled to sum to the
row count, so the prior weighs as it does there). Prints the fitted values, the MAPE per
source for rows of 16 MiB and more and for all rows, and Fernandez et al.'s scan, predicted
against observed (message size x nodes).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from trainscale.published.accuracy import collective_predictions
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import Catalogue, load_catalogue
from trainscale.sim.parameters import SHARED_PARAMETERS

NETWORK = (
    "nvlink_efficiency",
    "nvls_efficiency",
    "nic_efficiency",
    "nccl_latency_scale",
    "congestion_per_doubling",
    "nccl_fill_chunks",
)
MIB = 2.0**20


def fit(published, start: Calibration, catalogue: Catalogue) -> Calibration:
    specs = [p for p in SHARED_PARAMETERS if p.name in NETWORK]
    lower = np.array([p.lower for p in specs])
    upper = np.array([p.upper for p in specs])
    prior = np.array([p.default for p in specs])
    prior_sd = 0.5 * (upper - lower)
    rows = published.collectives
    # 1/rows of its source per squared residual, rescaled so the weights sum to the row count
    # (the prior then weighs against the data as in trainscale.calibrate.fit, one unit per row).
    per_source = rows.groupby("citation")["citation"].transform("size").to_numpy()
    weight = np.sqrt(len(rows) / (rows["citation"].nunique() * per_source))

    def with_x(x: np.ndarray) -> Calibration:
        return replace(start, **{p.name: float(v) for p, v in zip(specs, x, strict=True)})

    def residuals(x: np.ndarray) -> np.ndarray:
        pred = collective_predictions(published, with_x(x), catalogue)
        r = np.log(
            pred["predicted_busbw_gbytes_per_s"] / pred["observed_busbw_gbytes_per_s"]
        ).to_numpy()
        return np.concatenate([weight * r, (x - prior) / prior_sd])

    x0 = np.clip([start.value(p.name) for p in specs], lower, upper)
    result = least_squares(
        residuals, x0, bounds=(lower, upper), x_scale=upper - lower, diff_step=1e-3,
        loss="soft_l1", f_scale=0.1,
    )  # fmt: skip
    return with_x(result.x)


def main() -> None:
    pd.set_option("display.width", 160)
    catalogue = load_catalogue()  # the shipped catalogues, measurements and calibration
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models,
        frameworks=catalogue.framework_keys,
    )  # fmt: skip
    start = load_calibration(frameworks=catalogue.framework_keys)
    fitted = fit(published, start, catalogue)
    print("fitted network parameters (bounds):")
    for spec in SHARED_PARAMETERS:
        if spec.name in NETWORK:
            print(
                f"  {spec.name:26s} {fitted.value(spec.name):8.4f}   "
                f"[{spec.lower:g}, {spec.upper:g}]  prior {spec.default:g}"
            )
    rows = collective_predictions(published, fitted, catalogue)
    large = rows[rows["size_bytes"] >= 16 * MIB]
    table = pd.DataFrame(
        {
            "rows>=16MiB": large.groupby("citation").size(),
            "MAPE>=16MiB": large.groupby("citation")["ape_pct"].mean(),
            "rows": rows.groupby("citation").size(),
            "MAPE all": rows.groupby("citation")["ape_pct"].mean(),
        }
    ).fillna(0.0)
    table.index = [name[:60] for name in table.index]
    print("\nMAPE per source (%):")
    print(table.round(1).to_string())
    print(
        f"  all rows: >=16MiB {large['ape_pct'].mean():.1f} %, all {rows['ape_pct'].mean():.1f} %"
    )
    for key, label in (("Fernandez", "Fernandez et al. scan"), ("GTC24", "GTC24 NVLSTree scan")):
        scan = rows[rows["citation"].str.contains(key)].copy()
        scan["nodes"] = (scan["num_gpus"] // scan["gpus_per_node"]).astype(int)
        scan["cell"] = [
            f"{p:4.0f}/{o:4.0f}"
            for p, o in zip(
                scan["predicted_busbw_gbytes_per_s"],
                scan["observed_busbw_gbytes_per_s"],
                strict=True,
            )
        ]
        grid = scan.pivot_table(index="size_bytes", columns="nodes", values="cell", aggfunc="first")
        grid.index = [f"{s / MIB:.0f}MiB" for s in grid.index]
        print(f"\n{label}: predicted/observed busbw GB/s (rows: size, columns: nodes)")
        print(grid.fillna("").to_string())
    other = rows[~rows["citation"].str.contains("Fernandez|GTC24")]
    print("\nother rows:")
    print(
        other[["citation", "collective", "size_bytes", "num_gpus", "predicted_busbw_gbytes_per_s",
               "observed_busbw_gbytes_per_s", "error_pct"]]
        .assign(citation=other["citation"].str[:40]).round(1).to_string(index=False)
    )  # fmt: skip


if __name__ == "__main__":
    main()
