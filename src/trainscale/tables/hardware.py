"""Table ``hardware``: the GPU catalogue, and how each GPU grew over the one before it.

One row per GPU of ``data/hardware.yaml`` in catalogue (generation) order: dense bf16 peak, HBM
capacity and bandwidth, NVLink bandwidth, the scale-out NIC line rate per GPU of its default
system, TDP, and each quantity as a multiple of the V100's (:data:`REFERENCE_GPU`, the oldest
GPU of the catalogue) — compute grew faster than memory and network bandwidth, which is why newer
GPUs spend more of a step waiting. (Growth over the row above would compare an A800 with an H200:
the catalogue is not one line of generations.)

Unit words in column names: ``gbytes_per_s`` is 10⁹ bytes/s (GB/s), ``gbit_per_s`` is 10⁹ bits/s
(Gb/s); no column or catalogue key says "gbps", which could mean either.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.schema import HARDWARE_COLUMNS, names
from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["GROWTH_SUFFIX", "REFERENCE_GPU", "hardware_table", "render"]

_QUANTITIES = (
    "bf16_tflops",
    "hbm_gbytes_per_s",
    "nvlink_gbytes_per_s",
    "nic_gbit_per_s_per_gpu",
    "tdp_w",
)

#: The GPU every growth column compares against.
REFERENCE_GPU = "v100-sxm-32gb"

#: Suffix of the growth columns: the quantity divided by :data:`REFERENCE_GPU`'s.
GROWTH_SUFFIX = "_x_v100"


def hardware_table(hardware: HardwareCatalog) -> pd.DataFrame:
    """The GPU table (see module docstring) of ``hardware``, the GPU catalogue its caller
    loaded (``data/hardware.yaml``).

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.HARDWARE_COLUMNS`: ``gpu`` (catalogue key), ``system`` (its
        default system), ``bf16_tflops`` (dense TFLOP/s), ``hbm_gib`` (GiB),
        ``hbm_gbytes_per_s`` (GB/s), ``nvlink_gbytes_per_s`` (GB/s per direction),
        ``nic_gbit_per_s_per_gpu`` (Gb/s), ``tdp_w`` (W), and ``<quantity>_x_v100``: the
        quantity divided by that of :data:`REFERENCE_GPU` (NaN throughout if the catalogue has
        no such GPU).
    """
    rows = []
    for key, gpu in hardware.gpus.items():
        system = hardware.system_for(key)
        rows.append(
            {
                "gpu": key,
                "system": system.key,
                "bf16_tflops": gpu.bf16_flops_per_s / 1e12,
                "hbm_gib": gpu.hbm_bytes / 2**30,
                "hbm_gbytes_per_s": gpu.hbm_bytes_per_s / 1e9,
                "nvlink_gbytes_per_s": gpu.nvlink_bytes_per_s / 1e9,
                "nic_gbit_per_s_per_gpu": system.nic_bytes_per_s_per_gpu * 8 / 1e9,
                "tdp_w": gpu.tdp_w,
            }
        )
    table = pd.DataFrame(rows)
    reference = table[table["gpu"] == REFERENCE_GPU]
    for quantity in _QUANTITIES:
        base = float(reference[quantity].iloc[0]) if len(reference) else float("nan")
        table[f"{quantity}{GROWTH_SUFFIX}"] = table[quantity] / base
    return table[names(HARDWARE_COLUMNS)]


def render(stem: str | os.PathLike[str], *, hardware: HardwareCatalog) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}`` for ``hardware`` (the GPU catalogue)."""
    from trainscale.report import write_table

    table = hardware_table(hardware)
    growth = {f"{q}{GROWTH_SUFFIX}": "{:.2f}×" for q in _QUANTITIES}
    return write_table(
        table,
        stem,
        label="tab:hardware",
        caption="GPUs of the catalogue (data/hardware.yaml, with sources) in their default "
        "systems; columns ending in \\_x\\_v100 divide each quantity by the V100's (V100 SXM2 "
        "32 GB in a DGX-1). gbytes\\_per\\_s: GB/s "
        "($10^9$ bytes/s); gbit\\_per\\_s: Gb/s ($10^9$ bits/s).",
        float_format={
            "bf16_tflops": ",.0f",
            "hbm_gib": ".0f",
            "hbm_gbytes_per_s": ",.0f",
            "nvlink_gbytes_per_s": ".0f",
            "nic_gbit_per_s_per_gpu": ".0f",
            "tdp_w": ",.0f",
            **growth,
        },
    )
