"""torchtitan step lines (trainscale.bench.logging), without PyTorch.

Reference: ../shared/reference/log-formats.md §1.1 — torchtitan's format string (pytorch/
torchtitan ``components/metrics.py`` @ 00fbaafa) and the public ezpz/Aurora example line.
"""

from __future__ import annotations

import io
import re

import pytest

from trainscale.bench.logging import StepLogger, format_step
from trainscale.ingest.steplog import parse_step_log

# log-formats.md §1.1: the step line of the public Aurora log (its payload after the prefix).
AURORA_PAYLOAD = (
    "step:  2  loss: 14.4458  grad_norm: 41.7880  memory:  8.44GiB(13.20%)  tps: 6,697  "
    "tflops: 62.15  mfu: 20.84%"
)


def test_aurora_line_is_reproduced_exactly():
    assert (
        format_step(
            step=2,
            loss=14.4458,
            grad_norm=41.7880,
            memory_gib=8.44,
            memory_pct=13.20,
            tps=6697,
            tflops=62.15,
            mfu_pct=20.84,
        )
        == AURORA_PAYLOAD
    )


def test_field_widths_rounding_and_separators():
    text = format_step(
        step=123,
        loss=5.123456,
        grad_norm=0.81234,
        memory_gib=0.414,
        memory_pct=1.7149,
        tps=1234567.5,
        tflops=1234.567,
        mfu_pct=0.0,
    )
    # {step:2}, {loss:7.4f}, {grad_norm:7.4f}, {gib:5.2f}, round(tps) with ',', {tflops:,.2f}
    assert text == (
        "step: 123  loss:  5.1235  grad_norm:  0.8123  memory:  0.41GiB(1.71%)  "
        "tps: 1,234,568  tflops: 1,234.57  mfu: 0.00%"
    )


def test_logger_writes_the_titan_prefix_and_parses_back(tmp_path):
    path = tmp_path / "steps.log"
    echo = io.StringIO()
    logger = StepLogger(path, stream=echo)
    logger.info("settings line")
    for step in (1, 2, 3):
        logger.step(
            step=step,
            loss=6.0 - step,
            grad_norm=1.0,
            memory_gib=1.5,
            memory_pct=2.0,
            tps=1000.0 * step,
            tflops=0.5,
            mfu_pct=1.25,
        )
    logger.close()
    lines = path.read_text().splitlines()
    assert echo.getvalue().splitlines() == lines
    prefix = re.compile(r"^\[titan\] \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - root - INFO - ")
    assert all(prefix.match(line) for line in lines)
    assert lines[0].endswith(" - root - INFO - settings line")
    parsed = parse_step_log(path)
    assert parsed.format == "torchtitan" and parsed.skipped_lines == 0
    assert parsed.steps["tokens_per_s_per_gpu"].tolist() == [1000.0, 2000.0, 3000.0]
    assert parsed.steps["loss"].tolist() == [5.0, 4.0, 3.0]
    assert parsed.steps["mfu"].tolist() == pytest.approx([0.0125] * 3)
    assert parsed.steps["mem_gib"].tolist() == [1.5] * 3
