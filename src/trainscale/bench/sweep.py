"""Sweeps of benches for the Snakemake rule ``bench_run`` (``config/benches/<sweep>.yaml``).

A sweep file lists bench points, each one ``trainscale bench`` run under ``torchrun`` on
``nodes`` × ``procs_per_node`` processes, plus the SLURM resources they need::

    description: Llama-2-7B cut to 4 layers, FSDP on 1 and 2 H200 nodes
    resources:                 # per job (one point = one SLURM job of `nodes` nodes)
      runtime_min: 30          # wall-time limit, minutes
      mem_mb: 200000           # memory per node, MB
      cpus_per_node: 64        # CPUs per node for torchrun and its ranks
      gpus_per_node: 8         # GPUs per node (sbatch --gpus-per-node); 0 for CPU benches
      exclusive: true          # whole nodes (sbatch --exclusive), default false
    defaults:                  # bench options of every point (the command's long options)
      model: llama2-7b
      layers: 4
      seq_len: 4096
      device: cuda
    points:
      n1_fsdp:                 # point name: the run is results/bench/<sweep>/<sweep>_<point>
        nodes: 1
        procs_per_node: 8
      n2_fsdp:
        nodes: 2
        procs_per_node: 8
        options: {global_batch: 16}

Torch-free: Snakemake reads sweeps when it builds the DAG. :func:`load_sweep` checks every key
and builds each point's :class:`~trainscale.bench.config.BenchConfig` (so an impossible shape
or plan fails before anything is submitted); errors name the file and the key.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainscale.errors import InputFileError, TrainscaleError
from trainscale.io.numbers import option_float, option_int
from trainscale.io.yaml import load_yaml

__all__ = [
    "BenchPoint",
    "BenchSweep",
    "load_point",
    "load_sweep",
    "point_of",
    "sweep_run_dirs",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_TOP_KEYS = {"description", "resources", "defaults", "points"}
_RESOURCE_KEYS = {
    "runtime_min": 30,
    "mem_mb": 4000,
    "cpus_per_node": 2,
    "gpus_per_node": 0,
    "exclusive": False,
}
_POINT_KEYS = {"nodes", "procs_per_node", "options"}
#: Options a sweep may not set: the rule sets the output folder and the run id.
_RESERVED = {"out", "run_id"}


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchPoint:
    """One bench of a sweep: one SLURM job, one run folder."""

    sweep: str
    name: str
    run_id: str
    """``<sweep>_<name>``: the run folder's name (and the manifest's ``run_id``)."""
    nodes: int
    procs_per_node: int
    """torchrun ``--nproc-per-node``: GPUs (or CPU ranks) per node."""
    options: dict[str, Any]
    """Bench options (defaults merged with the point's), by the command's long option name."""
    runtime_min: int
    mem_mb: int
    cpus_per_node: int
    gpus_per_node: int
    exclusive: bool
    """Ask for whole nodes (``sbatch --exclusive``): no other job disturbs the timing."""

    @property
    def args(self) -> str:
        """The ``trainscale bench`` options as one shell-quoted string (without ``--out``)."""
        words: list[str] = []
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            words += [flag, str(value)]
        return shlex.join(words)

    @property
    def slurm_extra(self) -> str:
        """Extra ``sbatch`` options (the plugin's ``slurm_extra``): one task per node for
        ``srun torchrun``, and the GPUs per node. Nodes, memory, time and CPUs are plugin
        resources (``nodes``, ``mem_mb``, ``runtime``, ``cpus_per_task``), which ``slurm_extra``
        may not repeat."""
        extra = "--ntasks-per-node=1"
        if self.gpus_per_node:
            extra += f" --gpus-per-node={self.gpus_per_node}"
        if self.exclusive:
            extra += " --exclusive"
        return extra


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSweep:
    """A validated sweep file."""

    name: str
    description: str
    points: dict[str, BenchPoint]


def _bench_parser() -> argparse.ArgumentParser:
    from trainscale.bench.options import add_arguments

    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    add_arguments(parser)
    return parser


def _option_types(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.dest: action for action in parser._actions if action.option_strings}


def _check_options(
    path: Path, where: str, options: object, actions: dict[str, argparse.Action]
) -> dict[str, Any]:
    if not isinstance(options, dict):
        raise InputFileError(path, f"{where}: expected a mapping of bench options")
    for key, value in options.items():
        if key in _RESERVED:
            raise InputFileError(path, f"{where}.{key}: set by the workflow, not by a sweep")
        if key not in actions:
            allowed = ", ".join(sorted(set(actions) - _RESERVED))
            raise InputFileError(path, f"{where}.{key}: not a bench option; allowed: {allowed}")
        action = actions[key]
        if action.choices is not None and value not in action.choices:
            raise InputFileError(
                path,
                f"{where}.{key}: {value!r} is not one of {', '.join(map(str, action.choices))}",
            )
        kind = {option_int: int, option_float: float}.get(action.type, action.type or str)
        if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
            raise InputFileError(path, f"{where}.{key}: expected an integer, got {value!r}")
        if kind is float and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise InputFileError(path, f"{where}.{key}: expected a number, got {value!r}")
        if kind not in (int, float) and not isinstance(value, str | int | float):
            raise InputFileError(path, f"{where}.{key}: expected a text value, got {value!r}")
    return dict(options)


def _positive(path: Path, where: str, value: object, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InputFileError(path, f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _load_resources(path: Path, given: object) -> dict[str, Any]:
    """The sweep's ``resources``, with the defaults of the keys not given."""
    resources: dict[str, Any] = dict(_RESOURCE_KEYS)
    if not isinstance(given, dict):
        raise InputFileError(path, "resources: expected a mapping")
    for key, value in given.items():
        if key not in _RESOURCE_KEYS:
            raise InputFileError(
                path, f"resources.{key}: unknown; allowed: {', '.join(_RESOURCE_KEYS)}"
            )
        if key == "exclusive":
            if not isinstance(value, bool):
                raise InputFileError(
                    path, f"resources.exclusive: expected true or false, got {value!r}"
                )
            resources[key] = value
        else:
            resources[key] = _positive(
                path, f"resources.{key}", value, minimum=0 if key == "gpus_per_node" else 1
            )
    return resources


class _PointReader:
    """Reads the points of one sweep file: its resources, default options and the bench
    parser are checked and built once, then each point on top of them."""

    def __init__(self, path: Path, name: str, data: dict[str, Any]) -> None:
        self.path = path
        self.name = name
        """The sweep's name (the file's, without ``.yaml``)."""
        self.resources = _load_resources(path, data.get("resources") or {})
        self.parser = _bench_parser()
        self.actions = _option_types(self.parser)
        self.defaults = _check_options(path, "defaults", data.get("defaults") or {}, self.actions)

    def point(self, point_name: object, point: object) -> BenchPoint:
        """One entry of ``points``, its bench configuration built and planned on its world
        size."""
        from trainscale.bench.config import plan_bench
        from trainscale.bench.options import build_config

        path, parser, actions = self.path, self.parser, self.actions
        where = f"points.{point_name}"
        if not isinstance(point_name, str) or not _NAME_RE.match(point_name):
            raise InputFileError(path, f"{where}: name must use letters, digits, '_' and '-'")
        if not isinstance(point, dict):
            raise InputFileError(path, f"{where}: expected a mapping")
        unknown = set(point) - _POINT_KEYS
        if unknown:
            raise InputFileError(
                path,
                f"{where}: unknown key(s) {', '.join(sorted(unknown))};"
                f" allowed: {', '.join(sorted(_POINT_KEYS))}",
            )
        nodes = _positive(path, f"{where}.nodes", point.get("nodes", 1))
        procs = _positive(path, f"{where}.procs_per_node", point.get("procs_per_node", 1))
        options = {
            **self.defaults,
            **_check_options(path, f"{where}.options", point.get("options") or {}, actions),
        }
        missing = [
            f"{k}"
            for k, a in actions.items()
            if a.required and k not in _RESERVED and k not in options
        ]
        if missing:
            raise InputFileError(
                path,
                f"{where}: missing bench option(s) {', '.join(missing)}"
                " (in defaults or the point's options)",
            )
        bench_point = BenchPoint(
            sweep=self.name,
            name=point_name,
            run_id=f"{self.name}_{point_name}",
            nodes=nodes,
            procs_per_node=procs,
            options=options,
            **self.resources,
        )
        try:
            args = parser.parse_args([*shlex.split(bench_point.args), "--out", bench_point.run_id])
            plan_bench(build_config(args), world_size=nodes * procs, nodes=nodes)
        except (argparse.ArgumentError, TrainscaleError) as error:
            raise InputFileError(path, f"{where}: {error}") from None
        return bench_point


def load_sweep(path: str | Path) -> BenchSweep:
    """Load and check ``config/benches/<sweep>.yaml``.

    Raises
    ------
    InputFileError
        Unknown or missing keys, values of the wrong type, bench options the command does not
        have (or ``out``/``run_id``, which the workflow sets), a point whose bench configuration
        is invalid (its message says why), point names that are not file-name safe.
    """
    path = Path(path)
    data = load_yaml(path)
    name = path.name.removesuffix(".yaml")
    if not _NAME_RE.match(name):
        raise InputFileError(path, f"sweep name {name!r}: use letters, digits, '_' and '-'")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise InputFileError(
            path,
            f"unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_TOP_KEYS))}",
        )
    for key in ("description", "points"):
        if key not in data:
            raise InputFileError(path, f"missing key {key!r}")
    reader = _PointReader(path, name, data)
    points_data = data["points"]
    if not isinstance(points_data, dict) or not points_data:
        raise InputFileError(path, "points: expected a non-empty mapping of point name → point")
    points = {
        point_name: reader.point(point_name, point) for point_name, point in points_data.items()
    }
    return BenchSweep(name=name, description=str(data["description"]), points=points)


def load_point(path: str | Path, point: str) -> BenchPoint:
    """One point of a sweep file (for the Snakemake rule ``bench_run``).

    Raises
    ------
    InputFileError
        The sweep is invalid (see :func:`load_sweep`) or has no such point.
    """
    points = load_sweep(path).points
    if point not in points:
        raise InputFileError(path, f"no point {point!r}; points: {', '.join(points)}")
    return points[point]


def sweep_run_dirs(path: str | Path, results_dir: str = "results/bench") -> list[str]:
    """The run folders of every point of a sweep: ``<results_dir>/<sweep>/<run_id>``."""
    sweep = load_sweep(path)
    return [f"{results_dir}/{sweep.name}/{p.run_id}" for p in sweep.points.values()]


def point_of(wildcards: Any, sweeps_dir: str = "config/benches") -> BenchPoint:
    """The point of a ``bench_run`` job, from its ``sweep`` and ``point`` wildcards."""
    return load_point(f"{sweeps_dir}/{wildcards.sweep}.yaml", wildcards.point)
