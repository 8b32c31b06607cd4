"""Bench sweeps (config/benches/*.yaml) for the Snakemake rule bench_run, without PyTorch."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from trainscale.bench.sweep import load_sweep
from trainscale.errors import InputFileError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "path", sorted((REPO / "config" / "benches").glob("*.yaml")), ids=lambda p: p.name
)
def test_shipped_sweeps_load(path):
    sweep = load_sweep(path)
    assert sweep.points
    for point in sweep.points.values():
        assert point.run_id == f"{sweep.name}_{point.name}"
        assert "--out" not in point.args


def test_h200_sweep_points():
    sweep = load_sweep(REPO / "config" / "benches" / "h200_llama2-7b.yaml")
    point = sweep.points["n2_fsdp16"]
    assert (point.nodes, point.procs_per_node, point.gpus_per_node) == (2, 8, 8)
    assert point.slurm_extra == "--ntasks-per-node=1 --gpus-per-node=8 --exclusive"
    words = shlex.split(sweep.points["n1_fsdp4_tp2"].args)
    assert words[words.index("--tp") + 1] == "2"
    assert words[words.index("--model") + 1] == "llama2-7b"


SWEEP = """\
description: test
resources: {cpus_per_node: 2}
defaults: {layers: 2, hidden: 64, heads: 4, ffn: 128, vocab: 256, seq_len: 64}
points:
  a: {nodes: 1, procs_per_node: 2}
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_sweep(path)


def test_minimal_sweep(tmp_path):
    point = _load(tmp_path, SWEEP).points["a"]
    assert point.run_id == "s_a" and point.slurm_extra == "--ntasks-per-node=1"
    assert point.mem_mb == 4000  # default


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("seq_len: 64", "seq_len: 64, gpus: 8", "defaults.gpus: not a bench option; allowed:"),
        ("seq_len: 64", "seq_len: 64, out: x", "defaults.out: set by the workflow"),
        ("seq_len: 64", "seq_len: '64'", "defaults.seq_len: expected an integer, got '64'"),
        ("seq_len: 64", "seq_len: 64, sharding: zero3", "defaults.sharding: 'zero3' is not one of"),
        (", seq_len: 64", "", "points.a: missing bench option(s) seq_len"),
        (
            "procs_per_node: 2}",
            "procs_per_node: 2, options: {global_batch: 3}}",
            "points.a: bench: global_batch 3 must be a multiple of dp × micro_batch = 2 × 1",
        ),
        (
            "procs_per_node: 2}",
            "procs_per_node: 2, options: {heads: 3}}",
            "points.a: bench: hidden 64 must divide by heads 3",
        ),
        ("nodes: 1", "nodes: 0", "points.a.nodes: expected an integer >= 1, got 0"),
        ("{cpus_per_node: 2}", "{cpus: 2}", "resources.cpus: unknown"),
        ("  a: {", "  a b: {", "points.a b: name must use"),
        ("description: test\n", "", "missing key 'description'"),
    ],
)
def test_sweep_errors_name_the_key(tmp_path, old, new, message):
    assert old in SWEEP
    with pytest.raises(InputFileError) as info:
        _load(tmp_path, SWEEP.replace(old, new))
    assert str(info.value).startswith(str(tmp_path / "s.yaml"))
    assert message in str(info.value)


def test_helpers_for_the_rules(tmp_path):
    from types import SimpleNamespace

    from trainscale.bench.sweep import load_point, point_of, sweep_run_dirs

    path = tmp_path / "benches" / "s.yaml"
    path.parent.mkdir()
    path.write_text(SWEEP)
    assert sweep_run_dirs(path) == ["results/bench/s/s_a"]
    point = point_of(SimpleNamespace(sweep="s", point="a"), sweeps_dir=str(path.parent))
    assert (point.nodes, point.procs_per_node) == (1, 2)
    with pytest.raises(InputFileError, match="no point 'b'; points: a"):
        load_point(path, "b")
