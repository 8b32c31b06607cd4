"""Predict every published measurement and report the error, row by row and per source.

The comparison is made in tokens/s per GPU (what a planner sizes a run on), after converting
each published number with its own source's FLOP convention
(:func:`trainscale.published.measurements.flops_per_token`);
nccl-tests bus bandwidths are compared in GB/s. Accuracy is reported, never hidden: every
published row appears either with its error or with the reason it could not be predicted.
Predictions use the catalogue and calibration the caller passes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from trainscale.published.measurements import PublishedData
from trainscale.published.summary import summarise
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.network import Links, calibrated_network
from trainscale.sim.simulate import predict_with_rejects
from trainscale.sim.system.collectives import (
    NcclConstants,
    Network,
    allgather_time,
    allreduce_time,
    alltoall_time,
    p2p_time,
    reducescatter_time,
)

__all__ = [
    "BUSBW_FACTOR",
    "CollectiveRows",
    "collective_network",
    "collective_predictions",
    "summarise",
    "throughput_predictions",
    "validate_published",
]


def _with_errors(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` (predicted rows, in place) with ``predicted_tokens_per_s_per_gpu`` (the
    simulated ``tokens_per_s_per_gpu``), ``error_pct`` (predicted against
    ``observed_tokens_per_s_per_gpu``, %) and ``ape_pct`` (its absolute value, %)."""
    predicted = results["tokens_per_s_per_gpu"].to_numpy()
    observed = results["observed_tokens_per_s_per_gpu"].to_numpy()
    results["predicted_tokens_per_s_per_gpu"] = predicted
    results["error_pct"] = 100.0 * (predicted - observed) / observed
    results["ape_pct"] = np.abs(results["error_pct"])
    return results


def throughput_predictions(
    published: PublishedData, calibration: Calibration, catalogue: Catalogue
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predict the throughput rows; return (rows with prediction and error, simulator rejects)."""
    results, rejects = predict_with_rejects(
        published.throughput, catalogue=catalogue, calibration=calibration,
        origin="data/published/measurements.csv",
    )  # fmt: skip
    return _with_errors(results), rejects


def csv_moe_predictions(
    published: PublishedData, calibration: Calibration, catalogue: Catalogue
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Predict the mixture-of-experts rows that are lines of the published CSV itself
    (``data_file`` ``measurements.csv``: the Megatron-Bridge MoE rows), so that the validation
    table keeps one row per line; the runs of ``moe-measurements.csv`` are validated by
    ``trainscale validate --holdout``'s MoE section. Returns (rows with prediction and error,
    simulator rejects), as :func:`throughput_predictions`."""
    moe = published.moe
    if moe.empty or "data_file" not in moe:
        return pd.DataFrame(), pd.DataFrame()
    own = moe[moe["data_file"] == "measurements.csv"].reset_index(drop=True)
    if own.empty:
        return pd.DataFrame(), pd.DataFrame()
    results, rejects = predict_with_rejects(
        own, catalogue=catalogue, calibration=calibration,
        origin="data/published/measurements.csv",
    )  # fmt: skip
    return _with_errors(results), rejects


#: nccl-tests bus-bandwidth factor per collective (nccl-tests doc/PERFORMANCE.md): busbw = algbw
#: x factor(n).
BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: np.ones_like(n),
}


@dataclass(frozen=True, slots=True)
class CollectiveRows:
    """The normalised nccl-tests rows as arrays: everything their prediction needs that does not
    depend on the calibration (sizes, ranks, kinds, forced algorithms, line rates, NCCL's
    constants)."""

    size: np.ndarray
    n: np.ndarray
    g: np.ndarray
    kind: np.ndarray
    algorithm: np.ndarray
    nvlink_bytes_per_s: np.ndarray
    nvls: np.ndarray
    nic_line_bytes_per_s: np.ndarray
    fabric_factor: np.ndarray
    nccl: NcclConstants

    @classmethod
    def of(cls, rows: pd.DataFrame, catalogue: Catalogue) -> CollectiveRows:
        """The rows' arrays, line rates from ``catalogue.hardware``."""
        hardware = catalogue.hardware
        gpus = [hardware.gpus[key] for key in rows["gpu"]]
        return cls(
            size=rows["size_bytes"].to_numpy(np.float64),
            n=rows["num_gpus"].to_numpy(np.float64),
            g=rows["gpus_per_node"].to_numpy(np.float64),
            kind=rows["collective"].to_numpy(),
            algorithm=(
                rows["algorithm"].fillna("").to_numpy(object)
                if "algorithm" in rows
                else np.full(len(rows), "", dtype=object)
            ),
            nvlink_bytes_per_s=np.array([g.nvlink_bytes_per_s for g in gpus]),
            nvls=np.array([g.nvls for g in gpus]) & rows["nvls"].to_numpy(bool),
            nic_line_bytes_per_s=rows["nic_gbit_per_s_per_gpu"].to_numpy(np.float64) * 1e9 / 8,
            fabric_factor=rows["fabric"]
            .map(hardware.fabric_efficiency_factor)
            .to_numpy(np.float64),
            nccl=catalogue.nccl,
        )

    def network(self, calibration: Calibration) -> Network:
        """The achieved links under ``calibration``, from the builder ``predict`` uses
        (:func:`trainscale.sim.network.calibrated_network`). A row without a NIC (one node) gets
        1 B/s, so that the inter-node terms it never uses stay finite."""
        net = calibrated_network(
            Links(
                nvlink_bytes_per_s=self.nvlink_bytes_per_s,
                nvls=self.nvls,
                nic_bytes_per_s=self.nic_line_bytes_per_s,
                fabric_factor=self.fabric_factor,
            ),
            calibration,
            self.nccl,
        )
        return replace(net, nic_bytes_per_s=np.maximum(net.nic_bytes_per_s, 1.0))

    def busbw_gbytes_per_s(self, calibration: Calibration) -> np.ndarray:
        """Predicted nccl-tests bus bandwidth of every row, GB/s, each with its collective's
        busbw factor and, where the row forces one, its algorithm."""
        net = self.network(calibration)
        size, n, g = self.size, self.n, self.g
        times = {
            "allreduce": lambda: allreduce_time(size, n, g, net, algorithm=self.algorithm),
            "allgather": lambda: allgather_time(size, n, g, net),
            "reducescatter": lambda: reducescatter_time(size, n, g, net),
            "alltoall": lambda: alltoall_time(size, n, g, net),
            "sendrecv": lambda: p2p_time(size, n <= g, net),
        }
        busbw = np.full(len(size), np.nan)
        for name, time in times.items():
            here = self.kind == name
            if here.any():
                busbw = np.where(here, size / time() * BUSBW_FACTOR[name](n) / 1e9, busbw)
        return busbw


def collective_network(
    rows: pd.DataFrame, calibration: Calibration, catalogue: Catalogue
) -> Network:
    """The achieved links of each normalised nccl-tests row (see :func:`collective_predictions`)."""
    return CollectiveRows.of(rows, catalogue).network(calibration)


def collective_predictions(
    published: PublishedData, calibration: Calibration, catalogue: Catalogue
) -> pd.DataFrame:
    """Predict the nccl-tests rows (bus bandwidth, GB/s), each with its collective's busbw factor
    and, where the row forces one, its algorithm."""
    rows = published.collectives.copy()
    if rows.empty:
        return rows
    busbw = CollectiveRows.of(rows, catalogue).busbw_gbytes_per_s(calibration)
    rows["predicted_busbw_gbytes_per_s"] = busbw
    rows["error_pct"] = (
        100.0 * (busbw - rows["observed_busbw_gbytes_per_s"]) / rows["observed_busbw_gbytes_per_s"]
    )
    rows["ape_pct"] = np.abs(rows["error_pct"])
    return rows


def validate_published(
    calibration: Calibration, published: PublishedData, *, catalogue: Catalogue
) -> dict[str, pd.DataFrame]:
    """Predict all published rows; return ``throughput``, ``moe_throughput`` (the CSV's own
    mixture-of-experts lines, :func:`csv_moe_predictions`), ``collectives``, ``rejects`` tables.

    ``published`` (normalised with :func:`~trainscale.published.measurements.load_published`)
    is predicted under the caller's ``calibration`` and ``catalogue``.
    """
    throughput, sim_rejects = throughput_predictions(published, calibration, catalogue)
    moe, moe_rejects = csv_moe_predictions(published, calibration, catalogue)
    sim_rejects = pd.concat([f for f in (sim_rejects, moe_rejects) if not f.empty] or [sim_rejects])
    rejects = published.rejects
    if not sim_rejects.empty:
        extra = sim_rejects.assign(published_value_text=sim_rejects["published_value_text"])
        rejects = pd.concat(
            [rejects, extra[[c for c in rejects.columns if c in extra.columns]]],
            ignore_index=True,
        )
    return {
        "throughput": throughput,
        "moe_throughput": moe,
        "collectives": collective_predictions(published, calibration, catalogue),
        "rejects": rejects,
    }
