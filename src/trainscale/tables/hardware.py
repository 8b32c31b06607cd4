"""Table ``hardware``: the GPU catalogue, and how each GPU grew over the one before it.

One row per GPU of ``data/hardware.yaml`` in catalogue (generation) order: dense bf16 peak, HBM
capacity and bandwidth, NVLink bandwidth, the scale-out NIC line rate per GPU of its default
system, TDP, and each quantity's growth factor over the row above — compute grew faster than
memory and network bandwidth, which is why newer GPUs spend more of a step waiting.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from trainscale.system.hardware import HardwareCatalog, load_hardware

__all__ = ["HARDWARE_COLUMNS", "hardware_table", "render"]

_QUANTITIES = ("bf16_tflops", "hbm_gbps", "nvlink_gbps", "nic_gbit_per_gpu", "tdp_w")

#: Columns of :func:`hardware_table`, in order.
HARDWARE_COLUMNS: tuple[str, ...] = (
    "gpu",
    "system",
    "bf16_tflops",
    "hbm_gib",
    "hbm_gbps",
    "nvlink_gbps",
    "nic_gbit_per_gpu",
    "tdp_w",
    *(f"{q}_growth_x" for q in _QUANTITIES),
)


def hardware_table(catalog: HardwareCatalog | None = None) -> pd.DataFrame:
    """The GPU table (see module docstring).

    Returns
    -------
    pandas.DataFrame
        :data:`HARDWARE_COLUMNS`: ``gpu`` (catalogue key), ``system`` (its default system),
        ``bf16_tflops`` (dense TFLOP/s), ``hbm_gib`` (GiB), ``hbm_gbps`` (GB/s),
        ``nvlink_gbps`` (GB/s per direction), ``nic_gbit_per_gpu`` (Gb/s), ``tdp_w`` (W), and
        ``<quantity>_growth_x``: the quantity divided by the row above's (NaN on the first row).
    """
    catalog = catalog or load_hardware()
    rows = []
    for key, gpu in catalog.gpus.items():
        system = catalog.system_for(key)
        rows.append(
            {
                "gpu": key,
                "system": system.key,
                "bf16_tflops": gpu.bf16_flops_per_s / 1e12,
                "hbm_gib": gpu.hbm_bytes / 2**30,
                "hbm_gbps": gpu.hbm_bytes_per_s / 1e9,
                "nvlink_gbps": gpu.nvlink_bytes_per_s / 1e9,
                "nic_gbit_per_gpu": system.nic_bytes_per_s_per_gpu * 8 / 1e9,
                "tdp_w": gpu.tdp_w,
            }
        )
    table = pd.DataFrame(rows)
    for quantity in _QUANTITIES:
        table[f"{quantity}_growth_x"] = table[quantity] / table[quantity].shift(1)
    return table[list(HARDWARE_COLUMNS)]


def render(stem: str | os.PathLike[str]) -> tuple[Path, ...]:
    """Write ``stem.{csv,md,tex}``."""
    from trainscale.report import write_table

    table = hardware_table()
    growth = {f"{q}_growth_x": "{:.2f}×" for q in _QUANTITIES}
    return write_table(
        table,
        stem,
        label="tab:hardware",
        caption="GPUs of the catalogue (data/hardware.yaml, with sources) in their default "
        "systems; growth factors are over the row above.",
        float_format={
            "bf16_tflops": ",.0f",
            "hbm_gib": ".0f",
            "hbm_gbps": ",.0f",
            "nvlink_gbps": ".0f",
            "nic_gbit_per_gpu": ".0f",
            "tdp_w": ",.0f",
            **growth,
        },
    )
