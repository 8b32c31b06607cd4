"""Harness runs shared by the tests in this folder (each started once per session).

The runs use a tiny Llama-style shape so that a 2-rank gloo run on 2 CPU cores takes seconds.
Tests that need PyTorch are marked ``bench`` and skip, with the reason, when it is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_GLOG_WARNING = re.compile(r"^W\d{4} \d{2}:\d{2}:\d{2}")

#: A tiny decoder: 2 layers, hidden 64, grouped-query attention 4/2 heads.
TINY = [
    "--layers",
    "2",
    "--hidden",
    "64",
    "--heads",
    "4",
    "--kv-heads",
    "2",
    "--ffn",
    "128",
    "--vocab",
    "256",
    "--seq-len",
    "256",
]


@dataclass(frozen=True)
class Launch:
    """A finished harness launch."""

    run_dir: Path
    process: subprocess.CompletedProcess[str]
    wall_s: float


def env_with_source() -> dict[str, str]:
    """The environment with this checkout's ``src`` first on PYTHONPATH and the interpreter's
    folder first on PATH (for ``torchrun``), so subprocesses use this code and this venv."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def launch(command: list[str], run_dir: Path, *, timeout: float = 240) -> Launch:
    """Run a harness command line; fail the test with its output if it fails."""
    start = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=REPO,
        env=env_with_source(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - start
    # torchrun's glog-style warning lines ("W1130 16:32:43.586000 …") would hide the error.
    stderr = "\n".join(line for line in done.stderr.splitlines() if not _GLOG_WARNING.match(line))
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{stderr[-6000:]}"
    return Launch(run_dir=run_dir, process=done, wall_s=wall)


def torchrun(nproc: int, *args: str) -> list[str]:
    """``torchrun --standalone --nproc-per-node N -m trainscale.cli bench ARGS``."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "trainscale.cli",
        "bench",
        *args,
    ]


@pytest.fixture(scope="session")
def torch_module():
    """PyTorch, or skip: the harness is the optional ``.[bench]`` extra."""
    return pytest.importorskip("torch", reason="PyTorch is not installed (pip install '.[bench]')")


@pytest.fixture(scope="session")
def gloo_run(torch_module, tmp_path_factory) -> Launch:
    """2 ranks, gloo, FSDP over dp=2, 20 steps of which 5 warm-up, 3 profiled."""
    run_dir = tmp_path_factory.mktemp("gloo") / "gloo_fsdp2"
    return launch(
        torchrun(
            2,
            *TINY,
            "--micro-batch",
            "8",
            "--steps",
            "20",
            "--warmup",
            "5",
            "--profile-steps",
            "3",
            "--out",
            str(run_dir),
        ),
        run_dir,
    )


@pytest.fixture(scope="session")
def single_run(torch_module, tmp_path_factory) -> Launch:
    """One process without torchrun (``python -m trainscale.bench``), 8 steps."""
    run_dir = tmp_path_factory.mktemp("single") / "single"
    return launch(
        [
            sys.executable,
            "-m",
            "trainscale.bench",
            *TINY,
            "--micro-batch",
            "4",
            "--steps",
            "8",
            "--warmup",
            "2",
            "--out",
            str(run_dir),
        ],
        run_dir,
    )


@pytest.fixture(scope="session")
def tp_run(torch_module, tmp_path_factory) -> Launch:
    """2 ranks, tensor parallel 2 (dp = 1): the same data and weights as ``single_run``."""
    run_dir = tmp_path_factory.mktemp("tp") / "tp2"
    return launch(
        torchrun(
            2,
            *TINY,
            "--micro-batch",
            "4",
            "--steps",
            "8",
            "--warmup",
            "2",
            "--tp",
            "2",
            "--out",
            str(run_dir),
        ),
        run_dir,
    )
