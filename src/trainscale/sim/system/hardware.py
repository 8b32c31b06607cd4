"""The hardware catalogue: GPUs and systems (``data/hardware.yaml``).

Units are converted to SI once, here: FLOP/s, bytes, bytes/s, watts. The YAML keys carry the
catalogue's units (``bf16_tflops``, ``hbm_gbytes_per_s``, ``nic_gbit_per_s_per_gpu``); the
dataclass fields carry
SI units in their names (``bf16_flops_per_s``, ``hbm_bytes_per_s``, ``nic_bytes_per_s_per_gpu``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml, require_keys
from trainscale.paths import data_dir, schema_file

__all__ = [
    "COOLING",
    "FABRICS",
    "Facility",
    "Gpu",
    "HardwareCatalog",
    "HostPower",
    "SwitchPower",
    "System",
    "load_hardware",
]

FABRICS = ("infiniband", "roce", "efa", "ethernet", "slingshot")
COOLING = ("air", "liquid", "immersion")

_GIB = 2**30
_GPU_KEYS = (
    "description", "bf16_tflops", "fp8_tflops", "hbm_gib", "hbm_gbytes_per_s",
    "nvlink_gbytes_per_s_per_direction", "nvls", "tdp_w", "idle_w", "gemm_efficiency_max",
    "gemm_half_efficiency_dim", "flash_attention", "attention_efficiency_max", "sources",
)  # fmt: skip
_SYSTEM_KEYS = (
    "description", "gpu", "gpus_per_node", "nic_gbit_per_s_per_gpu", "fabric", "nvswitch",
    "host_power", "sources",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPower:
    """A node's non-GPU power (CPUs, DRAM, NICs, NVSwitch, fans, PSU losses), watts: ``idle_w``
    with its GPUs idle, ``max_w`` with them at full load, linear in the GPUs' activity."""

    idle_w: float
    max_w: float
    cooling: str
    """One of :data:`COOLING`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchPower:
    """Scale-out switch power per port (at one GPU NIC's line rate), watts, and the radix."""

    w_per_port: float
    radix: int
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Facility:
    """The facility around the nodes: the PUE assumed where a configuration sets none."""

    pue_default: float
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU model."""

    key: str
    """Catalogue key, e.g. ``h100-sxm-80gb``."""
    description: str
    bf16_flops_per_s: float
    """Dense BF16/FP16 tensor-core peak, FLOP/s."""
    fp8_flops_per_s: float | None
    """Dense FP8 tensor-core peak, FLOP/s; None where the GPU has no FP8."""
    hbm_bytes: float
    """HBM capacity, bytes."""
    hbm_bytes_per_s: float
    """HBM bandwidth, bytes/s."""
    nvlink_bytes_per_s: float
    """NVLink bandwidth per GPU per direction, bytes/s."""
    nvls: bool
    """NVLink SHARP (in-switch reduction) available."""
    tdp_w: float
    idle_w: float
    """Power with a CUDA context held and nothing running, watts."""
    gemm_efficiency_max: float
    """Best achievable fraction of the BF16 peak on large GEMMs (MAMF / peak)."""
    fp8_gemm_efficiency_max: float | None
    gemm_half_efficiency_dim: float
    """GEMM size (smallest dimension) at which efficiency is half of the maximum."""
    flash_attention: bool
    """FlashAttention runs on this GPU; without it attention materialises the s×s scores."""
    attention_efficiency_max: float
    """Best FlashAttention-2 forward+backward throughput as a fraction of the BF16 peak."""
    fused_attention_efficiency_max: float
    """The same for the fused attention kernels Transformer Engine selects (cuDNN fused
    attention, FlashAttention-3 on Hopper); equal to ``attention_efficiency_max`` where the
    catalogue gives no separate figure."""
    sources: tuple[str, ...]
    label: str
    """Name in figures, tables and notes (``H100 80GB``); the key where the catalogue gives none."""
    color_slot: int | None
    """Fixed position in the figures' palette; None: a free one (:func:`trainscale.names`)."""
    device_names: tuple[str, ...]
    """Fragments of the CUDA device name that identify this GPU (``H100``)."""
    device_min_memory_gib: float
    """Least device memory, GiB, for :attr:`device_names` to match (0: any)."""
    aliases: tuple[str, ...]
    """Regular expressions (case-insensitive search) for a published source's GPU wording."""


@dataclass(frozen=True, slots=True, kw_only=True)
class System:
    """A node design plus its scale-out network."""

    key: str
    description: str
    gpu: str
    gpus_per_node: int
    nic_bytes_per_s_per_gpu: float
    """Scale-out NIC line rate per GPU, bytes/s."""
    fabric: str
    """One of :data:`FABRICS`."""
    nvswitch: bool
    host_power: HostPower
    sources: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    """Regular expressions (case-insensitive search) for a published source's system wording."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareCatalog:
    """Everything in ``data/hardware.yaml``."""

    gpus: dict[str, Gpu]
    systems: dict[str, System]
    default_system: dict[str, str]
    """GPU key → the system assumed when a configuration names only its GPU."""
    fabric_efficiency_factor: dict[str, float]
    switch_power: SwitchPower
    facility: Facility
    path: str

    def system_for(self, gpu: str) -> System:
        """Return the default system of a GPU."""
        return self.systems[self.default_system[gpu]]

    def label(self, key: str) -> str:
        """The GPU's readable name (its ``label``); an unknown key is returned as given."""
        gpu = self.gpus.get(str(key))
        return gpu.label if gpu is not None else str(key)

    def gpu_for_device(self, device_name: str, memory_gib: float) -> str | None:
        """The GPU key of a CUDA device name (``NVIDIA H100 80GB HBM3``) with ``memory_gib`` of
        memory, or None. A device matching several GPUs' ``device_names`` takes the longest
        fragment, then the largest ``device_min_memory_gib``, then the first GPU in the file."""
        matches = [
            (len(fragment), gpu.device_min_memory_gib, -i, key)
            for i, (key, gpu) in enumerate(self.gpus.items())
            for fragment in gpu.device_names
            if fragment in device_name and memory_gib >= gpu.device_min_memory_gib
        ]
        return max(matches)[3] if matches else None

    def gpu_for_text(self, text: str) -> str | None:
        """The GPU key of a published source's GPU wording (``H100-80GB``), or None: the GPU
        whose ``aliases`` give the longest case-insensitive match, the first in the file on a
        tie."""
        matches = []
        for i, (key, gpu) in enumerate(self.gpus.items()):
            for alias in gpu.aliases:
                if found := re.search(alias, text or "", flags=re.IGNORECASE):
                    matches.append((len(found.group(0)), -i, key))
        return max(matches)[2] if matches else None

    def system_for_text(self, text: str) -> str | None:
        """The system key whose ``aliases`` give the longest case-insensitive match in a
        source's wording, the first in the file on a tie; None without a match."""
        matches = []
        for i, (key, system) in enumerate(self.systems.items()):
            for alias in system.aliases:
                if found := re.search(alias, text or "", flags=re.IGNORECASE):
                    matches.append((len(found.group(0)), -i, key))
        return max(matches)[2] if matches else None


def _positive(path: Path, where: str, value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise InputFileError(path, f"{where}: expected a positive number, got {value!r}")
    return float(value)


def _parse_gpu(path: Path, key: str, entry: dict) -> Gpu:
    where = f"gpus.{key}"
    require_keys(path, where, entry, _GPU_KEYS)
    fp8 = entry["fp8_tflops"]
    fp8_eff = entry.get("fp8_gemm_efficiency_max")
    for name in (
        "gemm_efficiency_max", "fp8_gemm_efficiency_max", "attention_efficiency_max",
        "fused_attention_efficiency_max",
    ):  # fmt: skip
        value = entry.get(name)
        if value is not None and not 0 < float(value) <= 1:
            raise InputFileError(path, f"{where}.{name}: must be in (0, 1], got {value!r}")
    return Gpu(
        key=key,
        description=str(entry["description"]),
        bf16_flops_per_s=_positive(path, f"{where}.bf16_tflops", entry["bf16_tflops"]) * 1e12,
        fp8_flops_per_s=None if fp8 is None else _positive(path, f"{where}.fp8_tflops", fp8) * 1e12,
        hbm_bytes=_positive(path, f"{where}.hbm_gib", entry["hbm_gib"]) * _GIB,
        hbm_bytes_per_s=_positive(path, f"{where}.hbm_gbytes_per_s", entry["hbm_gbytes_per_s"])
        * 1e9,
        nvlink_bytes_per_s=_positive(
            path,
            f"{where}.nvlink_gbytes_per_s_per_direction",
            entry["nvlink_gbytes_per_s_per_direction"],
        )
        * 1e9,
        nvls=bool(entry["nvls"]),
        tdp_w=_positive(path, f"{where}.tdp_w", entry["tdp_w"]),
        idle_w=_positive(path, f"{where}.idle_w", entry["idle_w"]),
        gemm_efficiency_max=float(entry["gemm_efficiency_max"]),
        fp8_gemm_efficiency_max=None if fp8_eff is None else float(fp8_eff),
        gemm_half_efficiency_dim=_positive(
            path, f"{where}.gemm_half_efficiency_dim", entry["gemm_half_efficiency_dim"]
        ),
        flash_attention=bool(entry["flash_attention"]),
        attention_efficiency_max=float(entry["attention_efficiency_max"]),
        fused_attention_efficiency_max=float(
            entry.get("fused_attention_efficiency_max", entry["attention_efficiency_max"])
        ),
        sources=tuple(entry["sources"]),
        label=str(entry.get("label", key)),
        color_slot=entry.get("color_slot"),
        device_names=tuple(str(name) for name in entry.get("device_names", ())),
        device_min_memory_gib=float(entry.get("device_min_memory_gib", 0.0)),
        aliases=tuple(_regex(path, f"{where}.aliases", a) for a in entry.get("aliases", ())),
    )


def _regex(path: Path, where: str, pattern: object) -> str:
    try:
        re.compile(str(pattern))
    except re.error as error:
        raise InputFileError(
            path, f"{where}: {pattern!r} is not a regular expression ({error})"
        ) from None
    return str(pattern)


def _parse_system(path: Path, key: str, entry: dict, gpus: dict[str, Gpu]) -> System:
    where = f"systems.{key}"
    require_keys(path, where, entry, _SYSTEM_KEYS)
    if entry["gpu"] not in gpus:
        raise InputFileError(
            path, f"{where}.gpu: unknown GPU {entry['gpu']!r}; valid: {', '.join(sorted(gpus))}"
        )
    if entry["fabric"] not in FABRICS:
        raise InputFileError(
            path, f"{where}.fabric: {entry['fabric']!r} is not one of {', '.join(FABRICS)}"
        )
    return System(
        key=key,
        description=str(entry["description"]),
        gpu=str(entry["gpu"]),
        gpus_per_node=int(_positive(path, f"{where}.gpus_per_node", entry["gpus_per_node"])),
        nic_bytes_per_s_per_gpu=_positive(
            path, f"{where}.nic_gbit_per_s_per_gpu", entry["nic_gbit_per_s_per_gpu"]
        )
        * 1e9
        / 8,
        fabric=str(entry["fabric"]),
        nvswitch=bool(entry["nvswitch"]),
        host_power=_host_power(path, where, entry["host_power"]),
        sources=tuple(entry["sources"]),
        aliases=tuple(_regex(path, f"{where}.aliases", a) for a in entry.get("aliases", ())),
    )


def _host_power(path: Path, where: str, entry: dict) -> HostPower:
    idle = _positive(path, f"{where}.host_power.idle_w", entry["idle_w"])
    top = _positive(path, f"{where}.host_power.max_w", entry["max_w"])
    if top < idle:
        raise InputFileError(path, f"{where}.host_power: max_w {top:g} below idle_w {idle:g}")
    return HostPower(idle_w=idle, max_w=top, cooling=str(entry["cooling"]))


@cache
def _load(path: Path) -> HardwareCatalog:
    data = load_yaml(path)
    check_document(data, path, schema_file("hardware"))
    require_keys(path, "top level", data, ("gpus", "systems", "default_system"))
    gpus = {key: _parse_gpu(path, key, entry) for key, entry in data["gpus"].items()}
    systems = {key: _parse_system(path, key, e, gpus) for key, e in data["systems"].items()}
    defaults = {str(k): str(v) for k, v in data["default_system"].items()}
    for gpu in gpus:
        if gpu not in defaults:
            raise InputFileError(path, f"default_system: no default system for GPU {gpu!r}")
    for gpu, system in defaults.items():
        if system not in systems:
            raise InputFileError(path, f"default_system.{gpu}: unknown system {system!r}")
    factors = {str(k): float(v) for k, v in data.get("fabric_efficiency_factor", {}).items()}
    missing = [fabric for fabric in FABRICS if fabric not in factors]
    if missing:
        raise InputFileError(path, f"fabric_efficiency_factor: missing {', '.join(missing)}")
    switch, facility = data["switch_power"], data["facility"]
    return HardwareCatalog(
        gpus=gpus,
        systems=systems,
        default_system=defaults,
        fabric_efficiency_factor=factors,
        switch_power=SwitchPower(
            w_per_port=float(switch["w_per_port"]),
            radix=int(switch["radix"]),
            sources=tuple(switch["sources"]),
        ),
        facility=Facility(
            pue_default=float(facility["pue_default"]), sources=tuple(facility["sources"])
        ),
        path=str(path),
    )


def load_hardware(path: str | Path | None = None) -> HardwareCatalog:
    """Load (and cache) the hardware catalogue ``path`` (default: the shipped
    ``data/hardware.yaml``), checked against ``workflow/schemas/hardware.schema.yaml``."""
    return _load(Path(path) if path is not None else data_dir() / "hardware.yaml")
