"""Power from the GPU board to the facility: node, switches and PUE, from a result table.

Per configuration (a row of a result table, :func:`with_node_power`):

- **GPU board**: ``power_w_per_gpu`` as the simulator predicted it (the phase model of
  :mod:`trainscale.sim.system.power`), unchanged; its activity ``a = (P_gpu − P_idle) /
  (TDP − P_idle)`` in [0, 1] is how busy the GPUs are;
- **node** (``node_power_w``): its GPUs plus the host, ``g·P_gpu + s·(H_idle + (H_max −
  H_idle)·a)`` with ``g`` the job's GPUs on one node, ``H_idle`` and ``H_max`` the system's
  catalogue ``host_power`` (CPUs, DRAM, NICs, NVSwitch, fans, PSU losses, sourced in
  ``data/hardware.yaml``: fans and PSU losses follow the GPUs' heat, so host power rises with
  their activity) and ``s`` the calibrated ``host_power_scale`` (:mod:`.terms`);
- **switches**: a non-blocking fat tree of the catalogue's ``switch_power``: every GPU's NIC
  takes 1 switch port with one switch level (the job's NICs fit on one switch), 3 with two
  (leaf, uplink, spine: up to ``radix²/2`` NICs) and 5 with three, each port drawing
  ``w_per_port`` scaled by the NIC's line rate over 400 Gb/s; a one-node job uses none;
- **facility** (``facility_power_w_per_node``): the node plus its share of the switches, times
  the PUE (column ``pue`` where the row sets it, else the catalogue's ``facility.pue_default``).

Energy per trained token at each scope is that power times the job's nodes over its tokens/s:
``energy_j_per_token`` (GPU board, the simulator's), ``energy_j_per_token_node`` and
``energy_j_per_token_facility``. Intervals (80 %): ``node_power_w`` and both energies times
``exp(±z·sigma)`` with the spreads the power calibration measured on sources left out
(:class:`~trainscale.sim.energy.terms.PowerTerms`); NaN where it has none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainscale.errors import ConfigurationError
from trainscale.schema import NODE_POWER_COLUMNS as NODE_POWER_TABLE
from trainscale.schema import names
from trainscale.sim.energy.terms import INTERVAL_Z, PowerTerms
from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["NODE_POWER_COLUMNS", "REFERENCE_PORT_GBIT", "switch_ports_per_nic", "with_node_power"]

#: Line rate (Gb/s) at which the catalogue's switch power per port is given.
REFERENCE_PORT_GBIT = 400.0
#: The columns :func:`with_node_power` adds, in order (``schema/columns.yaml``).
NODE_POWER_COLUMNS = names(NODE_POWER_TABLE)
_READS = ("gpu", "system", "num_gpus", "gpus_per_node", "nic_gbit_per_s_per_gpu",
          "power_w_per_gpu", "tokens_per_s")  # fmt: skip


def switch_ports_per_nic(nics: np.ndarray, radix: int) -> np.ndarray:
    """Switch ports one NIC port takes in a non-blocking fat tree of ``nics`` NIC ports: 1 with
    one level (``nics <= radix``), 3 with two (``<= radix²/2``), 5 with three."""
    nics = np.asarray(nics, np.float64)
    return np.where(nics <= radix, 1.0, np.where(nics <= radix * radix / 2, 3.0, 5.0))


def _pue(result: pd.DataFrame, default: float) -> np.ndarray:
    if "pue" not in result.columns:
        return np.full(len(result), default)
    given = pd.to_numeric(result["pue"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    bad = np.flatnonzero(~np.isnan(given) & ~((given >= 1.0) & (given <= 3.0)))
    if len(bad):
        raise ConfigurationError(
            [(int(r), "pue", f"{result['pue'].iloc[r]!r} is not a PUE in [1, 3] (empty: "
              f"{default:g}, the catalogue's default)") for r in bad], origin="input",
        )  # fmt: skip
    return np.where(np.isnan(given), default, given)


def with_node_power(
    result: pd.DataFrame, hardware: HardwareCatalog, terms: PowerTerms
) -> pd.DataFrame:
    """``result`` (a simulator result table: it reads ``gpu``, ``system``, ``num_gpus``,
    ``gpus_per_node``, ``nic_gbit_per_s_per_gpu``, ``power_w_per_gpu``, ``tokens_per_s`` and an
    optional ``pue``) with :data:`NODE_POWER_COLUMNS` added (or replaced); units in the names,
    defined in ``schema/columns.yaml``."""
    missing = [name for name in _READS if name not in result.columns]
    if missing:
        raise ValueError(f"with_node_power: the result lacks {', '.join(missing)}")
    gpus = [hardware.gpus[str(g)] for g in result["gpu"]]
    hosts = [hardware.systems[str(s)].host_power for s in result["system"]]
    idle = np.array([g.idle_w for g in gpus], np.float64)
    tdp = np.array([g.tdp_w for g in gpus], np.float64)
    p_gpu = result["power_w_per_gpu"].to_numpy(np.float64)
    activity = np.clip((p_gpu - idle) / (tdp - idle), 0.0, 1.0)
    host_idle = np.array([h.idle_w for h in hosts], np.float64)
    host_max = np.array([h.max_w for h in hosts], np.float64)
    host = terms.host_power_scale * (host_idle + (host_max - host_idle) * activity)
    num_gpus = result["num_gpus"].to_numpy(np.float64)
    nodes = np.ceil(num_gpus / result["gpus_per_node"].to_numpy(np.float64))
    on_node = num_gpus / nodes
    node = on_node * p_gpu + host
    switch = hardware.switch_power
    port_w = (
        switch.w_per_port
        * result["nic_gbit_per_s_per_gpu"].to_numpy(np.float64)
        / REFERENCE_PORT_GBIT
    )
    switches = np.where(
        nodes > 1, on_node * port_w * switch_ports_per_nic(num_gpus, switch.radix), 0.0
    )
    pue = _pue(result, hardware.facility.pue_default)
    facility = (node + switches) * pue
    tokens_per_s = result["tokens_per_s"].to_numpy(np.float64)
    energy_node = node * nodes / tokens_per_s
    energy_facility = facility * nodes / tokens_per_s
    power_f, energy_f = (
        np.exp(INTERVAL_Z * sigma) if sigma is not None else np.nan
        for sigma in (terms.node_power_log_sigma, terms.energy_log_sigma)
    )
    columns = {
        "pue": pue, "gpu_activity": activity, "host_power_w": host,
        "switch_power_w_per_node": switches, "node_power_w": node,
        "node_power_w_lo": node / power_f, "node_power_w_hi": node * power_f,
        "facility_power_w_per_node": facility, "energy_j_per_token_node": energy_node,
        "energy_j_per_token_node_lo": energy_node / energy_f,
        "energy_j_per_token_node_hi": energy_node * energy_f,
        "energy_j_per_token_facility": energy_facility,
        "energy_j_per_token_facility_lo": energy_facility / energy_f,
        "energy_j_per_token_facility_hi": energy_facility * energy_f,
    }  # fmt: skip
    out = result.drop(columns=[c for c in NODE_POWER_COLUMNS if c in result.columns])
    return out.assign(**{name: columns[name] for name in NODE_POWER_COLUMNS})
