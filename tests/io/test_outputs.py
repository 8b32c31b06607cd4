"""No output overwrites an input: :func:`trainscale.io.outputs.check_outputs`, used by every
command and workflow script, compares resolved paths and device/inode (symlinks and hard links)
against every input, a run folder's files included, and the outputs against each other."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.errors import TrainscaleError

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "data" / "runs" / "cpu_gloo_2rank_tiny"

#: How an output may name an existing input file.
ALIASES = ("same", "dotted", "absolute", "symlink", "hardlink", "symlinked_folder")


def _alias(tmp: Path, target: Path, how: str) -> Path:
    """A path naming ``target`` (relative to the cwd ``tmp``) in the way ``how``."""
    if how == "same":
        return target.relative_to(tmp)
    if how == "dotted":
        return Path("sub", "..", target.relative_to(tmp))
    if how == "absolute":
        return target.resolve()
    if how == "symlink":
        link = tmp / "link.out"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        return link
    if how == "hardlink":
        link = tmp / "hard.out"
        link.unlink(missing_ok=True)
        os.link(target, link)
        return link
    folder = tmp / "linked_folder"
    if not folder.exists():
        folder.symlink_to(target.parent, target_is_directory=True)
    return folder / target.name


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    how=st.sampled_from(ALIASES),
    depth=st.integers(0, 3),
    as_folder=st.booleans(),
    option=st.sampled_from(["-o", "--steps", "--table"]),
)
def test_any_spelling_of_an_input_is_refused(
    tmp_path_factory: pytest.TempPathFactory, how: str, depth: int, as_folder: bool, option: str
) -> None:
    from trainscale.io.outputs import check_outputs

    tmp = tmp_path_factory.mktemp("clash")
    (tmp / "sub").mkdir()
    folder = tmp.joinpath("run", *[f"d{i}" for i in range(depth)])
    folder.mkdir(parents=True)
    target = folder / "power.csv"
    target.write_text("raw log\n")
    cwd = Path.cwd()
    os.chdir(tmp)
    try:
        output = _alias(tmp, target, how)
        given_input = tmp / "run" if as_folder else target
        with pytest.raises(TrainscaleError, match=rf"{option} names the input .*power\.csv"):
            check_outputs({option: output}, [given_input])
    finally:
        os.chdir(cwd)
    assert target.read_text() == "raw log\n"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(how=st.sampled_from(ALIASES[:5]))
def test_two_outputs_naming_one_file_are_refused(
    tmp_path_factory: pytest.TempPathFactory, how: str
) -> None:
    from trainscale.io.outputs import check_outputs

    tmp = tmp_path_factory.mktemp("two")
    (tmp / "sub").mkdir()
    first = tmp / "out.parquet"
    first.write_text("")
    cwd = Path.cwd()
    os.chdir(tmp)
    try:
        with pytest.raises(TrainscaleError, match="-o and --steps name one file"):
            check_outputs({"-o": first, "--steps": _alias(tmp, first, how)}, [])
    finally:
        os.chdir(cwd)


def test_distinct_outputs_pass(tmp_path: Path) -> None:
    from trainscale.io.outputs import check_outputs

    run = tmp_path / "run"
    run.mkdir()
    (run / "power.csv").write_text("x")
    check_outputs({"-o": run / "row.parquet", "--steps": tmp_path / "steps.parquet"}, [run])


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "args, message",
    [
        (("ingest", "RUN", "-o", "RUN/logs/steps_rank0.parquet"), None),  # not an input: fine
        (("ingest", "RUN", "-o", "RUN/logs/steps_rank0.log"), "suffix"),
        (("ingest", "RUN", "-o", "link.parquet"), "names the input"),
        (("ingest", "RUN", "-o", "x.parquet", "--steps", "./x.parquet"), "name one file"),
        (("ingest", "RUN", "-o", "out.csv"), "-o writes .parquet"),
        (("calibrate", "--measurements", "RUN", "-o", "RUN/run.yaml"), "names the input"),
        (("calibrate", "--measurements", "RUN", "-o", "m.csv"), "-o writes .yaml or .yml"),
        (("trace", "RUN/traces/trace_rank0.json.gz", "-o", "trace.csv"), "names the input"),
        (("trace", "RUN/traces/trace_rank0.json.gz", "-o", "RUN/traces/trace_rank0.json.gz"),
         "-o writes .csv"),
    ],
)  # fmt: skip
def test_commands_never_overwrite_an_input(
    tmp_path: Path, args: tuple[str, ...], message: str | None, cli
) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    args = tuple(arg.replace("RUN", RUN.name) for arg in args)
    (tmp_path / "link.parquet").symlink_to(run / "logs" / "steps_rank0.log")
    os.link(run / "traces" / "trace_rank0.json.gz", tmp_path / "trace.csv")
    before = _digest(run)
    result = cli(*args, cwd=tmp_path)
    if message is None:
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert _digest(run) == before
    assert not (tmp_path / "x.parquet").exists()


def test_a_workflow_script_refuses_an_output_naming_an_input(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from trainscale.workflow import rule_script

    source = tmp_path / "in.parquet"
    source.write_text("input")
    snakemake = SimpleNamespace(
        input=SimpleNamespace(table=str(source)),
        output=SimpleNamespace(table=str(tmp_path / "." / "in.parquet")),
        log=[str(tmp_path / "job.log")],
    )
    with pytest.raises(SystemExit), rule_script(snakemake):
        source.write_text("overwritten")
    assert source.read_text() == "input"
    assert "names the input" in (tmp_path / "job.log").read_text()
