"""environment.yml (conda) and pyproject.toml (pip) pin the same versions."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)\s*$")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def _pins(requirements: list[str], where: str) -> dict[str, str]:
    pins = {}
    for requirement in requirements:
        match = _PIN.match(requirement)
        assert match, f"{where}: {requirement!r} is not pinned with =="
        name = _normalise(match.group(1))
        assert name not in pins, f"{where}: {name} pinned twice"
        pins[name] = match.group(2)
    return pins


def _environment() -> dict:
    return yaml.safe_load((REPO / "environment.yml").read_text())


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_pip_section_pins_exactly_the_runtime_and_test_requirements() -> None:
    project = _pyproject()["project"]
    pip = next(d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict))
    expected = _pins(project["dependencies"], "pyproject.toml dependencies")
    expected |= _pins(project["optional-dependencies"]["test"], "pyproject.toml test extra")

    pinned = _pins(pip, "environment.yml pip section")

    assert pinned == expected


def test_conda_python_satisfies_requires_python() -> None:
    conda = [d for d in _environment()["dependencies"] if isinstance(d, str)]
    python = next(d for d in conda if d.startswith("python"))
    minimum = _pyproject()["project"]["requires-python"]

    assert re.fullmatch(r"python=3\.\d+", python), python
    assert minimum.startswith(">=")
    version = tuple(int(p) for p in python.split("=")[1].split("."))
    assert version >= tuple(int(p) for p in minimum[2:].split("."))
    assert "pip" in conda


def test_the_slurm_executor_plugin_is_an_extra_not_a_dependency() -> None:
    """User trial item 4: Snakemake imports every installed executor plugin on each call, and
    the SLURM plugin then runs `scontrol show config` (snakemake-executor-plugin-slurm 2.8.0,
    the help text of its status_command setting), which waits about 9 s for a controller that
    does not answer. A local install leaves it out; the slurm and test extras carry it."""
    project = _pyproject()["project"]
    plugin = "snakemake-executor-plugin-slurm"

    assert plugin not in _pins(project["dependencies"], "pyproject.toml dependencies")
    slurm = _pins(project["optional-dependencies"]["slurm"], "pyproject.toml slurm extra")
    test = _pins(project["optional-dependencies"]["test"], "pyproject.toml test extra")
    assert slurm[plugin] == test[plugin]
