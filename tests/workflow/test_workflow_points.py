"""A study of the user's own gets reports/studies/<study>/points.{csv,md}: one row per plotted
point naming the winning plan, marked where it changes."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.workflow

NAME = "llama2_70b_tp_switch"

#: Llama-2 70B with FSDP on H100: tp 2 wins up to 1,024 GPUs, tp 4 with micro-batch 2 at 2,048
#: (where the local batch is one sequence per data-parallel rank at tp 2).
STUDY = {
    "description": "Llama-2 70B, FSDP on H100, tp 2 or 4, micro-batch 1 or 2, 256 to 2,048 GPUs.",
    "fixed": {
        "model": "llama2-70b", "seq_len": 4096, "global_batch": 2048, "gpu": "h100-sxm-80gb",
        "pp": 1, "sharding": "fsdp", "recompute": "none", "precision": "bf16",
    },
    "sweep": {"num_gpus": [256, 512, 1024, 2048], "tp": [2, 4], "micro_batch": [1, 2]},
    "report": {"best_of": ["tp", "micro_batch"]},
}  # fmt: skip


def test_a_study_whose_winning_plan_switches_names_it_in_points(
    workflow_copy, run_snakemake
) -> None:
    workdir = workflow_copy(studies=(NAME,))
    (workdir / "config" / "studies" / f"{NAME}.yaml").write_text(
        yaml.safe_dump(STUDY, sort_keys=False)
    )
    out = workdir / "reports" / "studies" / NAME
    done = run_snakemake(workdir, "--cores", "2", f"reports/studies/{NAME}/points.md", timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    points = pd.read_csv(out / "points.csv")
    assert list(points["num_gpus"]) == [256, 512, 1024, 2048]
    assert list(points["tp"]) == [2, 2, 2, 4]
    assert list(points["plan_changed"]) == [False, False, False, True]
    assert (points["runner_up_margin_pct"] > 0).all()
    assert points["runner_up_plan"].str.len().gt(0).all()
    markdown = (out / "points.md").read_text()
    assert "pytorch · tp 4 · pp 1 · cp 1 · vpp 1 · fsdp · none · mb 2" in markdown
