"""``trainscale predict`` says what a thin interval rests on (user-trial-3 item 23,
:mod:`trainscale.sim.interval_caution`): read from the shipped calibration's intervals block."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from trainscale.cli import main
from trainscale.sim.calibration import load_calibration
from trainscale.sim.interval_caution import interval_caution

ONE = ["predict", "--model", "gpt3-175b", "--gpu", "a100-sxm-80gb", "--num-gpus", "64"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_framework_with_one_source_gets_its_held_out_width_beside_the_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    coverage = load_calibration().intervals.coverage["per_framework"]["deepspeed"]
    _, text = _run(capsys, *ONE, "--framework", "deepspeed")
    (line,) = [x for x in text.splitlines() if x.lstrip().startswith("caution")]
    assert "framework deepspeed has 6 calibration row(s) from 1 source(s)" in line
    assert f"{coverage['median_width_pct']:.0f} % wide (median)" in line
    assert f"covered {coverage['coverage_pct']:.0f} % of 6 row(s)" in line
    # the line sits under the interval it qualifies
    lines = text.splitlines()
    assert lines[lines.index(line) - 1].startswith("80 % interval")


def test_a_framework_with_its_own_quantile_on_a_calibrated_gpu_gets_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, text = _run(capsys, *ONE, "--framework", "megatron")
    assert "caution" not in text and "80 % interval" in text


def test_a_gpu_without_calibration_rows_is_named() -> None:
    intervals = load_calibration().intervals
    assert intervals is not None and "b200" not in intervals.facts.gpus_with_data
    text = interval_caution(intervals, "pytorch", "b200")
    assert text is not None and text.startswith("GPU b200 has no throughput row")
    assert interval_caution(intervals, "pytorch", "h100-sxm-80gb") is None
    assert interval_caution(None, "deepspeed", "b200") is None


def test_a_table_gets_one_note_per_framework_and_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"model": "llama2-7b", "gpu": gpu, "num_gpus": 64, "framework": fw, "seq_len": 4096,
         "global_batch": 512, "micro_batch": 1, "tp": 1, "pp": 1, "sharding": "zero1",
         "recompute": "none", "precision": "bf16"}
        for fw, gpu in [("deepspeed", "h100-sxm-80gb"), ("deepspeed", "h100-sxm-80gb"),
                        ("pytorch", "h100-sxm-80gb")]
    ]  # fmt: skip
    table, out = tmp_path / "configs.csv", tmp_path / "out.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    status, text = _run(capsys, "predict", str(table), "-o", str(out))
    assert status == 0, text
    notes = [x for x in text.splitlines() if "note:" in x]
    assert len(notes) == 1 and "2 row(s) of deepspeed on h100-sxm-80gb" in notes[0]


def test_a_plan_that_fits_only_within_the_memory_margin_is_flagged_in_the_breakdown() -> None:
    """user-trial-3 item 5: of GPT-3 175B plans on 256 A100 80GB (tp 8, micro-batch 2, longer
    sequences use more), one that fits but uses more than NEAR_MEMORY_FRACTION of the 80 GiB says
    so; one with room says only 'fits'."""
    from trainscale.commands.predict_breakdown import breakdown
    from trainscale.sim.memory_margin import NEAR_MEMORY_FRACTION
    from trainscale.sim.simulate import predict

    grid = pd.DataFrame(
        [
            {"model": "gpt3-175b", "gpu": "a100-sxm-80gb", "num_gpus": 256, "seq_len": seq_len,
             "global_batch": 1536, "micro_batch": 2, "tp": 8, "pp": pp, "sharding": "zero1",
             "recompute": "none", "precision": "bf16"}
            for pp in (2, 4) for seq_len in (2048, 2304, 2432)
        ]
    )  # fmt: skip
    result = predict(grid)
    near = result["fits_memory"] & (result["mem_gib_per_gpu"] > NEAR_MEMORY_FRACTION * 80)
    roomy = result["fits_memory"] & (result["mem_gib_per_gpu"] < 0.75 * 80)
    assert near.any() and roomy.any()
    text = breakdown(result[near].iloc[0], hbm_gib=80.0)
    assert "(fits, but uses more than 90 % of the GPU's 80 GiB" in text
    assert "GiB  (fits)" in breakdown(result[roomy].iloc[0], hbm_gib=80.0)
