"""A mixture-of-experts study run by the workflow: its points table names the winning expert
layout, which changes with scale (tests/data/moe_ep_switch.yaml: DeepSeek-V3 with tp 1 or 4,
pp 1 or 16 and expert parallelism 8 to 32 on 256 to 4,096 H100: at 256 GPUs the experts must
spread over more GPUs to fit, at 4,096 the pipeline gives way to tensor and wider expert
parallelism)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, copy_workflow, snakemake

pytestmark = pytest.mark.workflow

NAME = "moe_ep_switch"


def test_an_moe_study_names_its_winning_expert_layout(tmp_path: Path) -> None:
    workdir = copy_workflow(tmp_path / "run", studies=[NAME])
    shutil.copy(REPO / "tests" / "data" / f"{NAME}.yaml", workdir / "config" / "studies")
    target = f"reports/studies/{NAME}/points.md"
    done = snakemake(workdir, "--cores", "2", target, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    points = pd.read_csv(workdir / "reports" / "studies" / NAME / "points.csv")
    assert list(points["num_gpus"]) == [256, 512, 4096]
    assert {"ep", "etp"} <= set(points.columns)
    # the winning expert-parallel degree is not the same at every scale, and the table says
    # where it changes
    assert len(set(points["ep"])) > 1
    changed = points["ep"].ne(points["ep"].shift()) & points.index.to_series().gt(0)
    assert points.loc[changed, "plan_changed"].all()
    assert (points["plan"].str.contains(" · ep ")).all()
    markdown = (workdir / target).read_text()
    first = points.iloc[0]
    assert f"ep {first['ep']} · etp 1" in markdown
