"""The device a rank trains on: its catalogue key, peak FLOP/s and peak memory.

- CUDA: the device name (``NVIDIA H200``, ``NVIDIA H100 80GB HBM3`` …) is matched to a GPU of
  the hardware catalogue (``data/hardware.yaml``), whose dense BF16 peak gives the MFU; memory
  is ``torch.cuda.max_memory_reserved`` (torchtitan's ``memory`` field) over the device's total.
- CPU: no catalogue entry and no peak (MFU unknown unless ``--peak-tflops``); memory is the
  process's peak resident set size over the host's physical memory.
"""

from __future__ import annotations

import os
import platform
import resource
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["DeviceInfo", "catalogue_gpu_key", "describe_device", "peak_memory"]

_GIB = 2**30


def catalogue_gpu_key(device_name: str, memory_gib: float, hardware: HardwareCatalog) -> str | None:
    """The key of the GPU of ``hardware`` a CUDA device name and memory (GiB) belong to (each
    GPU's ``device_names`` and ``device_min_memory_gib`` in ``data/hardware.yaml``), or None if
    none matches.

    PCIe/NVL variants map to the SXM entry of the same chip: the dense peak differs (e.g. H100
    PCIe 756 vs SXM 989 TFLOP/s), so pass ``--peak-tflops`` for them.
    """
    return hardware.gpu_for_device(device_name, memory_gib)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """What the manifest and the step lines need to know about the device."""

    type: str
    """``cpu`` or ``cuda``."""
    name: str
    """Device name (CUDA) or CPU model / machine."""
    gpu_key: str | None
    """Hardware-catalogue key; None on CPU or for an unknown GPU."""
    memory_bytes: int
    """Device memory (CUDA) or host physical memory (CPU), bytes."""
    peak_flops_per_s: float | None
    """Dense peak FLOP/s for the run's precision; None when unknown."""


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def describe_device(device: torch.device, *, peak_tflops: float | None) -> DeviceInfo:
    """Describe ``device``; ``peak_tflops`` (per device) overrides the catalogue's peak."""
    if device.type == "cuda":
        from trainscale.sim.system.hardware import load_hardware

        hardware = load_hardware()  # the harness is a top-level caller: the shipped catalogue
        props = torch.cuda.get_device_properties(device)
        key = catalogue_gpu_key(props.name, props.total_memory / _GIB, hardware)
        peak = peak_tflops * 1e12 if peak_tflops else None
        if peak is None and key is not None:
            peak = hardware.gpus[key].bf16_flops_per_s
        return DeviceInfo(
            type="cuda",
            name=props.name,
            gpu_key=key,
            memory_bytes=int(props.total_memory),
            peak_flops_per_s=peak,
        )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return DeviceInfo(
        type="cpu",
        name=_cpu_name(),
        gpu_key=None,
        memory_bytes=int(memory),
        peak_flops_per_s=peak_tflops * 1e12 if peak_tflops else None,
    )


def peak_memory(device: torch.device, info: DeviceInfo) -> tuple[float, float]:
    """Peak memory since the last call as (GiB, % of the device); resets the CUDA peak.

    On CPU the peak resident set size cannot be reset: it is the peak since the process
    started.
    """
    if device.type == "cuda":
        reserved = torch.cuda.max_memory_reserved(device)
        torch.cuda.reset_peak_memory_stats(device)
    else:
        reserved = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return reserved / _GIB, 100.0 * reserved / info.memory_bytes
