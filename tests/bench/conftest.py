"""Harness runs shared by the tests in this folder (each started once per session).

The runs use a tiny Llama-style shape so that a 2-rank gloo run on 2 CPU cores takes seconds.
Tests that need PyTorch are marked ``bench`` and skip, with the reason, when it is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import cluster_env, run_process

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


def env_with_source() -> dict[str, str]:
    """The environment with this checkout's ``src`` first on PYTHONPATH and the interpreter's
    folder first on PATH (for ``torchrun``), so subprocesses use this code and this venv."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def launch(command: list[str], run_dir: Path, *, timeout: float = 240) -> Launch:
    """Run a harness command line; return it, failed or not: :func:`checked` checks it."""
    done = run_process(command, cwd=REPO, env=env_with_source(), timeout=timeout)
    return Launch(run_dir=run_dir, process=done)


def checked(run: Launch) -> Launch:
    """``run``; fail the test with its output if it failed."""
    done = run.process
    # torchrun's glog-style warning lines ("W1130 16:32:43.586000 …") would hide the error.
    stderr = "\n".join(line for line in done.stderr.splitlines() if not _GLOG_WARNING.match(line))
    command = " ".join(map(str, done.args))
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{stderr[-6000:]}"
    return run


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


def _gloo_run(folder: Path) -> Launch:
    """The work of :func:`gloo_run`."""
    run_dir = folder / "gloo_fsdp2"
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
def gloo_run(torch_module, tmp_path_factory) -> Launch:
    """2 ranks, gloo, FSDP over dp=2, 20 steps of which 5 warm-up, 3 profiled."""
    return checked(_gloo_run(tmp_path_factory.mktemp("gloo_run")))


def _single_run(folder: Path) -> Launch:
    """The work of :func:`single_run`."""
    run_dir = folder / "single"
    return launch(
        [
            sys.executable,
            "-m",
            "trainscale.cli",
            "bench",
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
def single_run(torch_module, tmp_path_factory) -> Launch:
    """One process without torchrun (``python -m trainscale.cli bench``), 8 steps."""
    return checked(_single_run(tmp_path_factory.mktemp("single_run")))


def _tp_run(folder: Path) -> Launch:
    """The work of :func:`tp_run`."""
    run_dir = folder / "tp2"
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


@pytest.fixture(scope="session")
def tp_run(torch_module, tmp_path_factory) -> Launch:
    """2 ranks, tensor parallel 2 (dp = 1): the same data and weights as ``single_run``."""
    return checked(_tp_run(tmp_path_factory.mktemp("tp_run")))


def slurm_problem() -> str | None:
    """Why the SLURM bench cannot run here (no `sinfo`, or no available partition), or None."""
    if shutil.which("sinfo") is None:
        return "sinfo is not installed: no SLURM cluster (start one with .ci/slurm-up)"
    done = subprocess.run(
        ["sinfo", "-h", "-o", "%a %T"], capture_output=True, text=True, timeout=30, check=False,
        env=cluster_env(),
    )  # fmt: skip
    if done.returncode != 0 or "up" not in done.stdout:
        return (
            f"no SLURM cluster answers (start one with .ci/slurm-up): "
            f"{(done.stderr or done.stdout).strip()[:200]}"
        )
    return None


@dataclass(frozen=True)
class SlurmBench:
    """The CPU smoke sweep run through SLURM (:func:`slurm_bench_run`)."""

    workdir: Path
    process: subprocess.CompletedProcess[str]


def _slurm_bench_run(folder: Path) -> SlurmBench | str:
    """The work of :func:`slurm_bench_run`: the run, or why it cannot run here."""
    problem = slurm_problem()
    if problem:
        return problem
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed (pip install '.[bench]')"
    (folder / "config" / "benches").mkdir(parents=True)
    shutil.copy(REPO / "config" / "benches" / "cpu_smoke.yaml", folder / "config" / "benches")
    (folder / "Snakefile").write_text(f'include: "{REPO / "rules" / "bench.smk"}"\n')
    env = {k: v for k, v in cluster_env(env_with_source()).items() if k != "SNAKEMAKE_PROFILE"}
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "results/bench/cpu_smoke.parquet",
        "--profile",
        str(REPO / "profiles" / "slurm-bench"),
        "--profile",
        str(REPO / "tests" / "slurm" / "profile"),
    ]
    done = run_process(command, cwd=folder, env=env, timeout=600)
    return SlurmBench(folder, done)


@pytest.fixture(scope="session")
def slurm_bench_run(tmp_path_factory) -> SlurmBench:
    """``snakemake results/bench/cpu_smoke.parquet --profile profiles/slurm-bench --profile
    tests/slurm/profile`` in a folder with config/benches/cpu_smoke.yaml and a Snakefile that
    includes rules/bench.smk; skips, with the reason, unless `sinfo` answers with an available
    partition and PyTorch is installed. Once per session."""
    result = _slurm_bench_run(tmp_path_factory.mktemp("slurm_bench_run"))
    if isinstance(result, str):
        pytest.skip(result)
    return result
