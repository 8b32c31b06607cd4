"""Published nccl-tests rows -> collective rows: the collective, the forced algorithm, the
message size, the group, the fabric and the observed bus bandwidth (GB/s), or a reject.

Predicted with the collective cost model (:mod:`trainscale.published.accuracy`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from trainscale.published.matching import fabric, gpu_key, nic_gbit_per_s_per_gpu
from trainscale.published.normalise import Rejected, Row, number
from trainscale.published.sources import SourceRules

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["collective_row"]

_COLLECTIVES: tuple[tuple[str, str], ...] = (
    (r"all_reduce", "allreduce"),
    (r"all_gather", "allgather"),
    (r"reduce_scatter", "reducescatter"),
    (r"alltoall", "alltoall"),
    (r"sendrecv", "sendrecv"),
)
_ALGORITHMS: tuple[tuple[str, str], ...] = (
    (r"ALGO=NVLSTree", "nvlstree"),
    (r"ALGO=NVLS\b", "nvls"),
    (r"ALGO=Ring", "ring"),
    (r"ALGO=Tree", "tree"),
)
_SIZE_UNITS = {"": None, "B": 1, "K": 2**10, "KB": 2**10, "KiB": 2**10, "M": 2**20, "MB": 2**20,
               "MiB": 2**20, "G": 2**30, "GB": 2**30, "GiB": 2**30}  # fmt: skip
#: Vendor bars without a message size: the ml-engineering README (network/README.md at commit
#: 744d01e1) matched GTC25's single-node 370 -> 480 GB/s bars "with a payload of about 8GiB".
_VENDOR_PEAK_BYTES = 8.0 * 2**30


def _collective_size(text: str, notes: str) -> tuple[float, str]:
    """Message size in bytes from a benchmark description, and the assumption made (if any).

    nccl-tests and every source here print sizes in binary units (``1M`` = ``1MiB`` = 2^20 B,
    ``1GB`` = 2^30 B, as nccl-tests' ``-b 1G`` means), so decimal and binary prefixes are read
    alike; an explicit byte count ``(1073741824 B)`` wins. A range (``4G-8G``: one value for a
    sweep) and a size-less description are rejected, except the GTC25 vendor peak bars, which
    get the ~8 GiB payload that reproduced them (:data:`_VENDOR_PEAK_BYTES`).
    """
    if m := re.search(r"\((\d+) B\)", text):
        return float(m.group(1)), ""
    if re.search(r"message \d+\s*[KMG]i?B?\s*-\s*\d+", text):
        raise Rejected("one value for a range of message sizes (4G-8G sweep), not a size")
    if "message size not stated" in text:
        if "vendor" in notes or "bar value" in notes:
            return _VENDOR_PEAK_BYTES, "message size not stated: vendor peak bar taken at ~8 GiB"
        raise Rejected("message size not stated")
    m = re.search(r"message (\d+(?:\.\d+)?)\s*(GiB|GB|G|MiB|MB|M|KiB|KB|K|B)?\b", text)
    if m is None or not m.group(2):
        raise Rejected("message size not found (or without a unit) in the benchmark description")
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)], ""


def collective_row(row: Row, rules: SourceRules, hardware: HardwareCatalog) -> dict:
    """One nccl-tests row: the collective, forced algorithm, size, group, fabric and busbw (the
    GPU wording matched to ``hardware``'s ``aliases``).

    Rejected: in-network reduction (IB SHARP / CollNet), GPUs or systems outside the catalogue
    (GB200 NVL72, a PCIe-only panel), a GPU or GPU count not stated, a value that is a bound or
    range. A source whose scan gives no hardware gets its ``collective_hardware_not_stated`` rule
    (``sources.yaml``: Fernandez et al.'s H100 SXM with 8 x 400 Gb/s InfiniBand per node,
    inferred from its ~355 GB/s plateau, data README section 4.15)."""
    text = row.text("model")
    notes = row.text("notes")
    inter = row.text("inter_node")
    intra = row.text("intra_node")
    gpu_text = row.text("gpu")
    assumptions: list[str] = []
    collective = next((k for p, k in _COLLECTIVES if re.search(p, text)), None)
    if collective is None:
        raise Rejected(f"benchmark {text!r} is not a modelled collective")
    algorithm = next((k for p, k in _ALGORITHMS if re.search(p, text)), "")
    if re.search(r"(?<!no )SHARP", inter) or "CollNet" in text or "collnet" in notes.lower():
        raise Rejected("in-network reduction (IB SHARP / CollNet) is not modelled")
    if "NVL72" in gpu_text or "NVL72" in inter:
        raise Rejected("GB200 NVL72 (multi-node NVLink domain) is not in the catalogue")
    if "PCI" in intra and not gpu_text:
        raise Rejected("PCIe-only node without a named GPU is not in the catalogue")
    size, assumption = _collective_size(text, notes)
    if assumption:
        assumptions.append(assumption)
    value_text = row.text("value").strip()
    if value_text.startswith((">", "<")):
        raise Rejected(f"value {value_text!r} is a bound, not a measurement")
    value = number(value_text.lstrip("~"))
    if not np.isfinite(value):
        raise Rejected(f"value {value_text!r} is not a number")
    num_gpus = row.integer("num_gpus")
    if num_gpus is None:
        raise Rejected("GPU count not stated")
    if not gpu_text:
        raise Rejected("GPU not stated")
    gpn = row.integer("gpus_per_node")
    if gpn is None:
        raise Rejected("GPUs per node not stated")
    inferred = rules.rule("collective_hardware_not_stated")
    if inferred is not None and "not stated" in gpu_text:
        gpu = inferred["gpu"]
        nic = float(inferred["nic_gbit_per_s_per_gpu"])
        assumptions.append(inferred["assumption"])
    else:
        gpu = gpu_key(gpu_text, hardware)
        if gpu is None:
            raise Rejected(f"GPU {gpu_text or 'not stated'!r} is not in the catalogue")
        nic = nic_gbit_per_s_per_gpu(inter, gpn)
        if nic is None and (m := re.search(r"(\d+)\s*x\s*(\d+)\s*Gb", inter)):
            nic = float(m.group(1)) * float(m.group(2)) / gpn
        elif nic is None and (m := re.search(r"(\d+)\s*(?:mlx5 )?HCAs per node", inter)):
            nic = float(m.group(1)) * 400.0 / gpn
            assumptions.append("HCA speed not stated: 400 Gb/s NDR (H100/H200 generation)")
        elif nic is None and num_gpus > gpn:
            nic = 400.0
            assumptions.append("network not stated: 8 x 400 Gb/s per node (DGX H100)")
    nvls = "disabled" not in text.lower()
    if "bar label" in notes and "SHARP" not in intra:
        nvls = False  # the vendor's bars put NVLink SHARP in separate bars
        assumptions.append("bar without SHARP in its label: NVLS not used")
    if "rank count not printed" in notes:
        assumptions.append(f"{num_gpus} ranks assumed (2 x 8 setup)")
    return {
        **row.provenance(),
        "collective": collective,
        "algorithm": algorithm,
        "size_bytes": size,
        "num_gpus": num_gpus,
        "gpus_per_node": gpn,
        "gpu": gpu,
        "nic_gbit_per_s_per_gpu": nic if nic is not None else 0.0,
        "fabric": fabric(inter),
        "nvls": nvls,
        "observed_busbw_gbytes_per_s": value,
        "assumptions": "; ".join(assumptions),
    }
