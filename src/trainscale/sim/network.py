"""The one builder of the calibrated collective network, for every caller.

:func:`calibrated_network` builds the achieved network of line-rate links (NVLink, NIC and NVLS
bandwidths times their fitted efficiencies and the fabric's factor; NCCL latencies scaled; the
fitted fabric congestion ``congestion_per_doubling`` and pipeline fill ``nccl_fill_chunks``).
``trainscale predict`` hands it the system part of the configurations; the collective figures and
the nccl-tests comparison, whose links are not a full configuration, describe them with
:class:`Links`. One builder for both, so no caller can drop a calibrated parameter that
``predict`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainscale.errors import TrainscaleError
from trainscale.sim.calibration import Calibration
from trainscale.sim.system.collectives import NcclConstants, Network
from trainscale.sim.system.hardware import HardwareCatalog

if TYPE_CHECKING:
    from trainscale.sim.catalogue import Catalogue
    from trainscale.sim.configs.arrays import SystemArrays

__all__ = ["Links", "calibrated_network", "default_links", "default_network"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Links:
    """Line-rate links of one or more setups: the fields of the configurations' system part
    (:class:`~trainscale.sim.configs.arrays.SystemArrays`) that the network is built from
    (bytes/s per GPU per direction; arrays or scalars)."""

    nvlink_bytes_per_s: np.ndarray
    nvls: np.ndarray
    """Whether NVLS AllReduce is available (and enabled)."""
    nic_bytes_per_s: np.ndarray
    """Line rate of one GPU's share of the scale-out NICs."""
    fabric_factor: np.ndarray
    """Efficiency factor of the fabric (``fabric_efficiency_factor`` in data/hardware.yaml)."""


def calibrated_network(
    links: Links | SystemArrays, calibration: Calibration, nccl: NcclConstants
) -> Network:
    """The achieved network of the line-rate ``links`` (a :class:`Links` or the system part of
    the configurations) under ``calibration`` and NCCL's constants ``nccl``
    (``catalogue.nccl``)."""
    return Network(
        nvlink_bytes_per_s=calibration.nvlink_efficiency * links.nvlink_bytes_per_s,
        nic_bytes_per_s=(calibration.nic_efficiency * links.fabric_factor * links.nic_bytes_per_s),
        nvls_bytes_per_s=np.where(
            links.nvls, calibration.nvls_efficiency * links.nvlink_bytes_per_s, 0.0
        ),
        latency_scale=calibration.nccl_latency_scale,
        constants=nccl,
        congestion_per_doubling=calibration.congestion_per_doubling,
        fill_chunks=calibration.nccl_fill_chunks,
    )


def default_links(gpu: str, hardware: HardwareCatalog) -> tuple[Links, int]:
    """The line-rate links of ``gpu`` in its default system of ``hardware``, and its GPUs per
    node."""
    if gpu not in hardware.gpus:
        raise TrainscaleError(f"unknown GPU {gpu!r}; valid: {', '.join(hardware.gpus)}")
    spec, system = hardware.gpus[gpu], hardware.system_for(gpu)
    links = Links(
        nvlink_bytes_per_s=np.float64(spec.nvlink_bytes_per_s),
        nvls=np.bool_(spec.nvls),
        nic_bytes_per_s=np.float64(system.nic_bytes_per_s_per_gpu),
        fabric_factor=np.float64(hardware.fabric_efficiency_factor[system.fabric]),
    )
    return links, int(system.gpus_per_node)


def default_network(
    gpu: str, calibration: Calibration, *, catalogue: Catalogue
) -> tuple[Network, int]:
    """The calibrated network of ``gpu`` in its default system (as ``predict`` builds it for a
    configuration on that GPU with no NIC override), and its GPUs per node, under the caller's
    ``calibration`` and ``catalogue`` (GPUs, systems and NCCL's constants)."""
    links, per_node = default_links(gpu, catalogue.hardware)
    return calibrated_network(links, calibration, catalogue.nccl), per_node
