"""`trainscale predict` of one mixture-of-experts configuration: the expert options reach the
simulator and the breakdown lists the all-to-all; a dense breakdown has no such line."""

from __future__ import annotations

import pytest

from trainscale.cli import main

QWEN3 = [
    "predict", "--model", "qwen3-235b-a22b", "--gpu", "h100-sxm-80gb", "--num-gpus", "256",
    "--tp", "2", "--pp", "8", "--vpp", "4", "--etp", "1", "--global-batch", "2048",
    "--sharding", "zero1", "--recompute", "selective", "--framework", "megatron",
]  # fmt: skip


def _all_to_all(out: str) -> float:
    line = next(line for line in out.splitlines() if "of which all-to-all" in line)
    return float(line.split()[3])


def test_expert_options_reach_the_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*QWEN3, "--ep", "32", "--moe-routing", "balanced"]) in (0, 3)
    one_group = capsys.readouterr().out
    assert "ep 32, etp 1, edp 1; balanced routing, the framework's dispatcher" in one_group
    assert main([*QWEN3, "--ep", "32", "--moe-routing", "balanced", "--moe-dispatcher",
                 "deepep"]) in (0, 3)  # fmt: skip
    deepep = capsys.readouterr().out
    assert "deepep dispatcher" in deepep
    # 32 ranks over 4 nodes: DeepEP sends one copy per remote node, not eight
    assert _all_to_all(deepep) < _all_to_all(one_group)
    assert main([*QWEN3, "--ep", "8", "--moe-routing", "capacity", "--capacity-factor",
                 "1.5"]) in (0, 3)  # fmt: skip
    assert "capacity routing" in capsys.readouterr().out


def test_a_capacity_factor_without_capacity_routing_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*QWEN3, "--ep", "8", "--capacity-factor", "1.5"]) == 2
    assert "applies to moe_routing capacity only" in capsys.readouterr().err


def test_a_dense_breakdown_has_no_all_to_all(capsys: pytest.CaptureFixture[str]) -> None:
    main(["predict", "--model", "llama3-8b", "--gpu", "h100-sxm-80gb", "--num-gpus", "8"])
    assert "all-to-all" not in capsys.readouterr().out
