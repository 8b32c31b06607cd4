"""The power and energy lines of ``trainscale predict``'s breakdown, each naming its scope.

Scopes (:mod:`trainscale.sim.energy.node`): **GPU board** (what ``nvidia-smi`` reads; the phase
model), **node** (its GPUs plus the host: CPUs, DRAM, NICs, NVSwitch, fans, PSU losses, at the
wall), **facility** (the node, its share of the scale-out switches, times the PUE). An interval is
printed where the power calibration has one (errors on metered sources left out of its fit).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["bill_lines", "cap_lines", "power_lines"]


def _interval(
    result: pd.Series,
    name: str,
    fmt: str,
    missing: str = "(no interval: the calibration file has no power block)",
) -> str:
    """``(80 % interval lo .. hi)`` of column ``name`` of ``result``, or ``missing``."""
    lo, hi = result.get(f"{name}_lo"), result.get(f"{name}_hi")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return missing
    return f"(80 % interval {lo:{fmt}} .. {hi:{fmt}})"


def power_lines(result: pd.Series) -> list[str]:
    """Power and energy per token of one predicted row at every scope it has."""
    lines = [
        "power, average over a step",
        f"  GPU board          {result['power_w_per_gpu']:12.1f} W per GPU (no interval: the "
        "metered runs are node-level)",
    ]
    has_node = "node_power_w" in result.index and not pd.isna(result["node_power_w"])
    if has_node:
        lines += [
            f"  node               {result['node_power_w']:12.0f} W per node "
            f"{_interval(result, 'node_power_w', '.0f')}: its GPUs plus host "
            f"{result['host_power_w']:.0f} W (CPUs, DRAM, NICs, NVSwitch, fans, PSU losses)",
            f"  facility           {result['facility_power_w_per_node']:12.0f} W per node: "
            f"node plus switches {result['switch_power_w_per_node']:.0f} W, times PUE "
            f"{result['pue']:.2f}",
        ]
    lines += [
        "energy per token, whole job",
        f"  GPU board          {result['energy_j_per_token']:12.4f} J",
    ]
    if has_node:
        lines += [
            f"  node               {result['energy_j_per_token_node']:12.4f} J "
            f"{_interval(result, 'energy_j_per_token_node', '.4f')}",
            f"  facility           {result['energy_j_per_token_facility']:12.4f} J "
            f"{_interval(result, 'energy_j_per_token_facility', '.4f')}",
        ]
    return lines


def _range(result: pd.Series, name: str, fmt: str) -> str:
    return _interval(result, name, fmt, "(no interval)")


def bill_lines(result: pd.Series) -> list[str]:
    """Time, energy per scope and cost to train ``train_tokens`` (none without the column)."""
    if "train_days" not in result.index:
        return []
    lines = [
        f"to train {result['train_tokens']:.4g} tokens (steady state: no failures, restarts, "
        "checkpoints or evaluations)",
        f"  time               {result['train_days']:12.2f} days "
        f"{_range(result, 'train_days', '.2f')}",
        f"  GPU-hours          {result['gpu_hours']:12,.0f} {_range(result, 'gpu_hours', ',.0f')}",
        f"  energy, GPU board  {result['energy_mwh_gpu']:12.1f} MWh (no interval: not validated "
        "at this scope)",
        f"  energy, node       {result['energy_mwh_node']:12.1f} MWh "
        f"{_range(result, 'energy_mwh_node', '.1f')}",
        f"  energy, facility   {result['energy_mwh_facility']:12.1f} MWh "
        f"{_range(result, 'energy_mwh_facility', '.1f')} at PUE {result['pue']:.2f}",
    ]
    if not pd.isna(result["cost_usd"]):
        lines.append(
            f"  cost               {result['cost_usd']:12,.0f} USD "
            f"{_range(result, 'cost_usd', ',.0f')} at {result['usd_per_gpu_hour']:g} USD per "
            "GPU-hour"
        )
    return lines


def cap_lines(sweep: pd.DataFrame, lowest: dict[str, pd.Series]) -> list[str]:
    """The table of one configuration at each power cap, the lowest-energy caps marked
    (``lowest``: scope -> its row of :func:`trainscale.sim.energy.caps.lowest_energy_caps`)."""
    top = sweep["tokens_per_s_per_gpu"].max()
    lines = [
        "",
        "GPU power cap (power_limit_w): throughput, power and energy per token by scope",
        f"{'cap W':>7} {'tok/s/GPU':>10} {'vs best':>8} {'GPU W':>7} {'node W':>8} "
        f"{'J/tok GPU':>10} {'J/tok node':>11} {'J/tok fac.':>11}",
    ]
    for row in sweep.sort_values("power_limit_w").itertuples():
        marks = [s for s, best in lowest.items() if best["power_limit_w"] == row.power_limit_w]
        lines.append(
            f"{row.power_limit_w:7.0f} {row.tokens_per_s_per_gpu:10.1f} "
            f"{100 * (row.tokens_per_s_per_gpu / top - 1):+7.1f}% {row.power_w_per_gpu:7.1f} "
            f"{row.node_power_w:8.0f} {row.energy_j_per_token:10.4f} "
            f"{row.energy_j_per_token_node:11.4f} {row.energy_j_per_token_facility:11.4f}"
            + (f"  <- lowest {', '.join(marks)}" if marks else "")
        )
    for scope, best in lowest.items():
        lines.append(
            f"lowest {scope} energy per token at a {best['power_limit_w']:.0f} W cap: "
            f"{best[f'energy_j_per_token_{scope}']:.4f} J "
            f"(80 % interval {best[f'energy_j_per_token_{scope}_lo']:.4f} .. "
            f"{best[f'energy_j_per_token_{scope}_hi']:.4f}), "
            f"{100 * (best['tokens_per_s_per_gpu'] / top - 1):+.1f} % throughput"
        )
    return lines
