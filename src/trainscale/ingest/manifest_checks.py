"""What the run-manifest schema cannot check: folder name, files, jobs, catalogue keys, plan.

:func:`semantic_problems` returns every problem of a loaded, schema-valid manifest as
``(line, key, message)`` (:data:`trainscale.io.schema.Problem`):

- ``run_id`` must be the run folder's name; every ``logs[].path`` must exist in the folder;
- parser options only for their kind (:data:`OPTIONS_BY_KIND`);
- with ``jobs``, every log names a job and every job has a log;
- in the run's and each job's configuration: ``model`` and ``gpu`` must be catalogue keys
  (``gpu`` may be ``cpu``); ``hidden`` divisible by ``heads``, ``heads`` by ``kv_heads`` (the
  catalogue shape overridden by explicit fields, :func:`trainscale.ingest.derived.resolved_shape`);
  ``num_gpus`` divisible by the model-parallel degree tp·pp·cp and ``global_batch`` a multiple
  of dp·``micro_batch`` (:mod:`trainscale.sim.degrees`).

A manifest states what the run states, so these are the interlocks of the fields it gives;
:func:`trainscale.sim.configs.build_configs` needs a complete configuration row and checks more.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from trainscale.errors import clip
from trainscale.ingest.derived import resolved_shape
from trainscale.io.schema import Problem, key_text, line_of
from trainscale.sim.degrees import data_parallel_degree, model_parallel_degree

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

    #: The parts of the catalogue a run is checked with: (hardware, models).
    Catalogues = tuple[HardwareCatalog, Mapping[str, ModelShape]]

__all__ = ["ALL_OPTIONS", "OPTIONS_BY_KIND", "semantic_problems"]

#: Log kind → the parser options a manifest may give its logs of that kind.
OPTIONS_BY_KIND = {
    "nvidia_smi": ("columns", "gpus_per_poll"),
    "dcgmi": ("start_time", "interval_s"),
}
ALL_OPTIONS = ("columns", "gpus_per_poll", "start_time", "interval_s")


def semantic_problems(
    data: dict[str, Any], path: Path, node: yaml.Node | None, catalogue: Catalogues
) -> list[Problem]:
    """Every problem the schema cannot see (module docstring) of the manifest ``data``, read
    from ``path`` (``node``: its composed YAML, for the lines)."""
    problems: list[Problem] = []

    def add(key_path: list[str | int], message: str) -> None:
        problems.append((line_of(node, key_path), key_text(key_path), message))

    run_dir = path.parent
    if data["run_id"] != run_dir.name:
        add(["run_id"], f"{data['run_id']!r} must be the run folder's name {run_dir.name!r}")
    jobs = data.get("jobs")
    for i, entry in enumerate(data["logs"]):
        for key_path, message in _log_problems(entry, jobs, run_dir):
            add(["logs", i, *key_path], message)
    if jobs is not None:
        used = {entry.get("job") for entry in data["logs"]}
        for name in sorted(set(jobs) - used):
            add(["jobs", name], "no log file names this job")
    configurations: list[tuple[list[str | int], dict[str, Any]]] = [
        (["configuration"], data.get("configuration", {}))
    ]
    if jobs:
        configurations += [
            (
                ["jobs", name, "configuration"],
                {**data.get("configuration", {}), **job.get("configuration", {})},
            )
            for name, job in jobs.items()
        ]
    for where, configuration in configurations:
        for key_path, message in _configuration_problems(configuration, catalogue):
            add([*where, *key_path], message)
    return problems


def log_path_problem(run_dir: Path, relpath: str) -> str | None:
    """Why the log ``relpath`` cannot be read from the run folder ``run_dir``, or None.

    The path is resolved (symlinks followed) and must stay inside the resolved run folder: a
    symlink to a file elsewhere is refused, since the run folder is what was shared and
    checked (the schema's ``..`` check is textual only). It must then be a regular file: a
    FIFO, a device or a socket is named as such (reading one would block or never end), a
    folder too.
    """
    given = run_dir / relpath
    if not given.exists() and not given.is_symlink():
        return f"no such file {clip(relpath)!r} in {run_dir}"
    try:
        resolved, root = given.resolve(strict=True), run_dir.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{clip(relpath)!r} is a broken or looping symlink in {run_dir}"
    if not resolved.is_relative_to(root):
        return (
            f"{clip(relpath)!r} leads outside the run folder {run_dir} (to {resolved}); copy "
            "the log into the run folder"
        )
    mode = resolved.stat().st_mode
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return f"{clip(relpath)!r} is {kind}, not a log file"
    return None


def _log_problems(
    entry: dict[str, Any], jobs: dict[str, Any] | None, run_dir: Path
) -> list[tuple[list[str | int], str]]:
    """One ``logs`` entry: its file, its parser options, its job."""
    problems: list[tuple[list[str | int], str]] = []
    problem = log_path_problem(run_dir, entry["path"])
    if problem is not None:
        problems.append((["path"], problem))
    for option in ALL_OPTIONS:
        if option in entry and option not in OPTIONS_BY_KIND.get(entry["kind"], ()):
            kinds = ", ".join(k for k, v in OPTIONS_BY_KIND.items() if option in v)
            problems.append(([option], f"only for kind(s) {kinds}, not {entry['kind']}"))
    if jobs is None and "job" in entry:
        problems.append((["job"], "names a job but the manifest has no 'jobs'"))
    elif jobs is not None and entry.get("job") not in jobs:
        problems.append(
            (
                ["job"] if "job" in entry else [],
                f"must name one of the jobs {', '.join(sorted(jobs))}",
            )
        )
    return problems


def _configuration_problems(
    cfg: dict[str, Any], catalogue: Catalogues
) -> list[tuple[list[str | int], str]]:
    """One configuration: catalogue keys, then the shape and plan interlocks."""
    problems: list[tuple[list[str | int], str]] = []
    hardware, models = catalogue
    if "model" in cfg and cfg["model"] not in models:
        problems.append(
            (
                ["model"],
                f"{cfg['model']!r} is not in the model catalogue "
                f"(data/models.yaml): {', '.join(sorted(models))}",
            )
        )
    gpus = hardware.gpus
    if "gpu" in cfg and cfg["gpu"] != "cpu" and cfg["gpu"] not in gpus:
        problems.append(
            (
                ["gpu"],
                f"{cfg['gpu']!r} is neither 'cpu' nor a GPU of the hardware "
                f"catalogue (data/hardware.yaml): {', '.join(sorted(gpus))}",
            )
        )
    return problems + _shape_problems(cfg, models) + _plan_problems(cfg)


def _shape_problems(
    cfg: dict[str, Any], models: Mapping[str, ModelShape]
) -> list[tuple[list[str | int], str]]:
    problems: list[tuple[list[str | int], str]] = []
    shape = resolved_shape(cfg, models)
    if shape.get("hidden") and shape.get("heads") and shape["hidden"] % shape["heads"]:
        problems.append(
            (["hidden"], f"hidden {shape['hidden']} is not divisible by heads {shape['heads']}")
        )
    if shape.get("heads") and shape.get("kv_heads") and shape["heads"] % shape["kv_heads"]:
        problems.append(
            (
                ["kv_heads"],
                f"heads {shape['heads']} is not divisible by kv_heads {shape['kv_heads']}",
            )
        )
    return problems


def _plan_problems(cfg: dict[str, Any]) -> list[tuple[list[str | int], str]]:
    tp, pp, cp = (cfg.get(k, 1) for k in ("tp", "pp", "cp"))
    if "num_gpus" in cfg and cfg["num_gpus"] % model_parallel_degree(tp, pp, cp):
        return [
            (
                ["num_gpus"],
                f"num_gpus {cfg['num_gpus']} is not divisible by tp·pp·cp = {tp}·{pp}·{cp}",
            )
        ]
    if all(k in cfg for k in ("num_gpus", "global_batch", "micro_batch")):
        dp = data_parallel_degree(cfg["num_gpus"], tp, pp, cp)
        if cfg["global_batch"] % (dp * cfg["micro_batch"]):
            return [
                (
                    ["global_batch"],
                    f"global_batch {cfg['global_batch']} is not a "
                    f"multiple of dp·micro_batch = {dp}·{cfg['micro_batch']}",
                )
            ]
    return []
