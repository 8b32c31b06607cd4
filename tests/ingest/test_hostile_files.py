"""Hostile files in a run folder or given to ``trace``: a log path that leads outside the run
folder (a symlink), a FIFO or a device, and a compressed trace that expands without bound are
named errors, exit status 2, in well under a second."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.errors import InputFileError
from trainscale.ingest.manifest import load_manifest
from trainscale.sim.catalogue import load_catalogue

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "data" / "runs" / "cpu_gloo_2rank_tiny"
LOG = "logs/steps_rank0.log"
CATALOGUE = load_catalogue()
SHIPPED = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}


def _run(tmp: Path) -> Path:
    run = tmp / RUN.name
    shutil.copytree(RUN, run)
    return run


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    inside=st.booleans(),
    hops=st.integers(1, 3),
    relative=st.booleans(),
    via_folder=st.booleans(),
)
def test_a_log_path_must_resolve_inside_the_run_folder(
    tmp_path_factory: pytest.TempPathFactory,
    inside: bool,
    hops: int,
    relative: bool,
    via_folder: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("links")
    run = _run(tmp)
    dest = (run / "dest") if inside else (tmp / "elsewhere")
    dest.mkdir()
    if via_folder:  # the log's folder is a symlink to dest, which holds the log
        shutil.move(run / LOG, dest / "steps_rank0.log")
        shutil.rmtree(run / "logs")
        link = run / "logs"
        link.symlink_to(os.path.relpath(dest, link.parent) if relative else dest)
    else:  # a chain of symlinks, relative or absolute, the last hop in the log's place
        target = dest / "real.log"
        shutil.move(run / LOG, target)
        for hop in range(hops):
            link = run / LOG if hop == hops - 1 else run / f"hop{hop}"
            link.symlink_to(os.path.relpath(target, link.parent) if relative else target)
            target = link
    if inside:
        assert load_manifest(run, **SHIPPED).logs[0].relpath == LOG
    else:
        with pytest.raises(InputFileError, match=rf"'{LOG}' leads outside the run folder"):
            load_manifest(run, **SHIPPED)


@pytest.mark.parametrize(
    "make, kind",
    [
        (lambda path: os.mkfifo(path), "a FIFO"),
        (lambda path: path.symlink_to("/dev/null"), "leads outside"),
        (lambda path: path.mkdir(), "a folder"),
    ],
    ids=["fifo", "device", "folder"],
)
def test_a_fifo_or_device_is_named_as_such(tmp_path: Path, make, kind: str) -> None:
    run = _run(tmp_path)
    (run / LOG).unlink()
    make(run / LOG)
    start = time.perf_counter()
    with pytest.raises(InputFileError, match=kind):
        load_manifest(run, **SHIPPED)
    assert time.perf_counter() - start < 1


def test_a_device_inside_the_run_folder_is_named(tmp_path: Path) -> None:
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null")
    run = _run(tmp_path)
    (run / LOG).unlink()
    try:
        os.mknod(run / LOG, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs privileges here")
    with pytest.raises(InputFileError, match="is a character device, not a log file"):
        load_manifest(run, **SHIPPED)


# --- compressed traces ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=4),
    limit=st.integers(1, 12000),
    byte=st.binary(min_size=1, max_size=3),
)
def test_decompressed_size_is_capped_over_gzip_members(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], limit: int, byte: bytes
) -> None:
    from trainscale.io.compressed import read_maybe_gzip

    path = tmp_path_factory.mktemp("gz") / "t.json.gz"
    members = [(byte * size)[:size] for size in sizes]
    path.write_bytes(b"".join(gzip.compress(m) for m in members))
    whole = b"".join(members)
    if len(whole) > limit:
        with pytest.raises(InputFileError, match="MiB once decompressed"):
            read_maybe_gzip(path, limit=limit)
    else:
        assert read_maybe_gzip(path, limit=limit) == whole


def test_a_truncated_gzip_is_still_named(tmp_path: Path) -> None:
    from trainscale.io.compressed import read_maybe_gzip

    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(b"x" * 10_000)[:-12])
    with pytest.raises(InputFileError, match="truncated or corrupt gzip"):
        read_maybe_gzip(path)


def test_a_trace_bomb_is_refused_fast(tmp_path: Path) -> None:
    path = tmp_path / "bomb.json.gz"
    compressor = zlib.compressobj(9, wbits=31)
    piece = b" " * 2**20
    with path.open("wb") as handle:  # 300 MiB of spaces in about 300 KB
        for _ in range(300):
            handle.write(compressor.compress(piece))
        handle.write(compressor.flush())
    assert path.stat().st_size < 2**20
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "trainscale.cli", "trace", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "256 MiB once decompressed" in result.stderr and "Traceback" not in result.stderr
    assert time.perf_counter() - start < 10  # includes the interpreter's start


# --- damaged trace events ------------------------------------------------------------------


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    dur=st.one_of(
        st.floats(-1e18, -1e-3),
        st.floats(3.6e9 * 1.001, 1e18),
        st.sampled_from(["12", None, float("nan"), float("inf"), True]),
    ),
    count=st.integers(1, 5),
    data=st.data(),
)
def test_damaged_kernel_events_are_counted_and_refused(
    tmp_path_factory: pytest.TempPathFactory, dur: object, count: int, data: st.DataObject
) -> None:
    from tests.ingest._traces import synthetic_trace, write_trace
    from trainscale.commands.trace import trace_table

    document = synthetic_trace()
    kernels = [k for k, e in enumerate(document["traceEvents"]) if e.get("cat") == "kernel"]
    chosen = sorted(data.draw(st.lists(st.sampled_from(kernels), min_size=count,
                                       max_size=count, unique=True) if count <= len(kernels)
                              else st.just(kernels)))  # fmt: skip
    for k in chosen:
        if dur is None:
            del document["traceEvents"][k]["dur"]
        else:
            document["traceEvents"][k]["dur"] = dur
    path = write_trace(tmp_path_factory.mktemp("t") / "rank0.json.gz", document)
    with pytest.raises(
        InputFileError,
        match=rf"^{path}: {len(chosen)} complete event\(s\) with a missing, negative or absurd "
        rf"duration, first traceEvents\[{chosen[0]}\]",
    ):
        trace_table([path])


def test_an_undamaged_trace_still_reads() -> None:
    from trainscale.commands.trace import trace_table

    traces = sorted((REPO / "data/runs/hta_samples/traces").glob("hta_trace_filter_sampled_rank-*"))
    assert len(trace_table(traces)) == len(traces)


def test_a_gzip_trailer_that_understates_the_size_is_still_capped(tmp_path: Path) -> None:
    from trainscale.io.compressed import read_maybe_gzip

    path = tmp_path / "liar.json.gz"
    data = bytearray(gzip.compress(b" " * 100_000))
    data[-4:] = (10).to_bytes(4, "little")  # ISIZE says 10 bytes
    path.write_bytes(bytes(data))
    with pytest.raises(InputFileError, match="once decompressed"):
        read_maybe_gzip(path, limit=50_000)
