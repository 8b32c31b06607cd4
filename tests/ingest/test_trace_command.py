"""Tests of trainscale.commands.trace (``trainscale trace TRACE… [-o OUT.csv]``).

Reference: the per-rank values of ../shared/real-samples/README.md (HTA 0.5.0), printed as HTA
reports them: overlap as a percentage of communication with two decimals.
"""

from __future__ import annotations

import argparse
import importlib

import pandas as pd
import pytest

from trainscale.cli import COMMANDS
from trainscale.commands import trace
from trainscale.errors import InputFileError

from ._samples import TRACE_FILTER_RANK0, TRACE_FILTER_RANK1, sample_file
from ._traces import synthetic_trace, write_trace


def _args(*argv):
    parser = argparse.ArgumentParser()
    trace.add_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def test_registry_fields():
    assert trace.NAME == "trace"
    assert "trace" in COMMANDS
    assert trace.HELP


def test_prints_table_and_writes_csv(tmp_path, capsys):
    out = tmp_path / "overlap.csv"
    paths = [sample_file(TRACE_FILTER_RANK1), sample_file(TRACE_FILTER_RANK0)]
    assert trace.run(_args(*paths, "-o", out)) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[:3] == ["rank", "compute", "(us)"]
    assert printed[1].split()[:8] == [
        "0",
        "106,252",
        "195,327",
        "23,068",
        "11.81",
        "172,259",
        "321,378",
        "53.56",
    ]
    assert printed[2].split()[:5] == ["1", "135,548", "168,027", "33,691", "20.05"]
    table = pd.read_csv(out)
    assert table["rank"].tolist() == [0, 1]
    assert table["comp_comm_overlap_pctg"].tolist() == [11.81, 20.05]
    assert table["exposed_comm_us"].tolist() == [172_259, 134_336]
    assert table["idle_us"].tolist() == [321_378, 328_671]


def test_include_last_step(tmp_path, capsys):
    path = write_trace(tmp_path / "rank-0.json", synthetic_trace())
    default = trace.trace_table([path])
    everything = trace.trace_table([path], include_last_step=True)
    # the last step adds one 100 µs compute kernel (see _traces.py)
    assert everything["comp_us"].iloc[0] - default["comp_us"].iloc[0] == 100
    assert trace.run(_args(path, "--include-last-step")) == 0
    assert "n/a" not in capsys.readouterr().out


def test_missing_trace_is_a_user_error(tmp_path):
    with pytest.raises(InputFileError, match=r"absent\.json"):
        trace.run(_args(tmp_path / "absent.json"))


def test_through_the_cli_when_all_commands_exist(tmp_path, capsys):
    for name in COMMANDS:
        try:
            importlib.import_module(f"trainscale.commands.{name}")
        except ModuleNotFoundError as error:
            pytest.skip(f"command module {name!r} is not written yet ({error})")
    from trainscale.cli import main

    assert main(["trace", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in capsys.readouterr().err


def _cpu_only(document: dict, *, keep_runtime: bool) -> dict:
    """The document without its GPU events (and without its cuda_runtime launches unless
    ``keep_runtime``): what a CPU-only profile, or one without ProfilerActivity.CUDA, holds."""
    events = [
        e
        for e in document["traceEvents"]
        if "stream" not in e.get("args", {})
        and (keep_runtime or e.get("cat") not in ("cuda_runtime", "ac2g"))
    ]
    return {**document, "traceEvents": events}


@pytest.mark.parametrize("keep_runtime", [False, True])
def test_trace_without_gpu_kernels_is_one_error_naming_the_file(tmp_path, capsys, keep_runtime):
    from trainscale.cli import main

    path = write_trace(
        tmp_path / "cpu-only.json", _cpu_only(synthetic_trace(), keep_runtime=keep_runtime)
    )
    out = tmp_path / "overlap.csv"
    assert main(["trace", str(path), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table of zeros
    assert not out.exists()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    # the categories it holds: 3 ProfilerStep + 3 aten::mm, and 9 cudaLaunchKernel if kept
    found = "cpu_op 3, user_annotation 3" if not keep_runtime else "cuda_runtime 9, cpu_op 3"
    assert f"{path}: no GPU kernel (no event with args.stream)" in lines[0]
    assert found in lines[0]
    assert "ProfilerActivity.CUDA" in lines[0]


def test_only_some_ranks_without_gpu_kernels_names_them_all(tmp_path):
    good = write_trace(tmp_path / "rank-0.json", synthetic_trace(rank=0, world_size=3))
    bad = [
        write_trace(
            tmp_path / f"rank-{r}.json",
            _cpu_only(synthetic_trace(rank=r, world_size=3), keep_runtime=True),
        )
        for r in (1, 2)
    ]
    with pytest.raises(InputFileError, match=r"rank-1\.json: no GPU kernel") as error:
        trace.trace_table([good, *bad])
    assert "so do 1 more of the 3 traces" in str(error.value)
    assert str(bad[1]) in str(error.value)


def test_gpu_kernels_only_in_the_dropped_last_step_names_include_last_step(tmp_path):
    document = synthetic_trace()
    # keep GPU events of step 3 only (correlation 9), and every CPU event
    document["traceEvents"] = [
        e
        for e in document["traceEvents"]
        if "stream" not in e.get("args", {}) or e["args"]["correlation"] == 9
    ]
    path = write_trace(tmp_path / "rank-0.json", document)
    with pytest.raises(InputFileError, match=r"all 1 GPU events .* --include-last-step"):
        trace.trace_table([path])
    assert trace.trace_table([path], include_last_step=True)["comp_us"].iloc[0] == 100
