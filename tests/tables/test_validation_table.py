"""Tests of trainscale.tables.validation."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.schema import VALIDATION_TABLE_COLUMNS, names
from trainscale.tables.validation import readable_reason, render, validation_table


def test_leads_with_held_out_error_per_source_with_in_sample_beside(validation_rows, holdout_rows):
    table = validation_table(validation_rows, holdout_rows)
    assert list(table.columns) == names(VALIDATION_TABLE_COLUMNS)
    assert table["block"].iloc[0] == "tokens/s per GPU, per source"
    sources = table[table["block"] == "tokens/s per GPU, per source"].set_index("source")
    assert sources.index.tolist() == ["A", "B"]
    assert (sources["error"] == "held out").all()
    assert sources["rows"].tolist() == [2, 1]
    assert sources["mape_pct"].tolist() == pytest.approx([20.0, 60.0])
    assert sources["max_ape_pct"].tolist() == pytest.approx([20.0, 60.0])
    assert sources["in_sample_mape_pct"].tolist() == pytest.approx([10.0, 50.0])
    assert sources["rejected"].tolist() == [0, 1]
    assert sources.loc["B", "reason"] == "GPU count not one number (source: '8 and 128')"
    total = table[table["block"] == "tokens/s per GPU, all sources"].iloc[0]
    assert total["source"] == "all" and total["rows"] == 3 and total["rejected"] == 2
    assert total["mape_pct"] == pytest.approx(100.0 / 3)
    assert total["in_sample_mape_pct"] == pytest.approx(70.0 / 3)


def test_per_framework_block_groups_the_held_out_rows(validation_rows, holdout_rows):
    table = validation_table(validation_rows, holdout_rows)
    frameworks = table[table["block"] == "tokens/s per GPU, per framework"].set_index("source")
    assert frameworks.index.tolist() == ["deepspeed", "megatron", "pytorch"]
    assert frameworks["mape_pct"].tolist() == pytest.approx([60.0, 20.0, 20.0])
    # in sample, by the framework of the same CSV row: 50 %, 10 %, 10 %
    assert frameworks["in_sample_mape_pct"].tolist() == pytest.approx([50.0, 10.0, 10.0])


def test_bus_bandwidth_all_sizes_and_scored_sizes(validation_rows, holdout_rows):
    table = validation_table(validation_rows, holdout_rows)
    every = table[table["block"] == "nccl-tests bus bandwidth, all sizes"]
    large = table[table["block"] == "nccl-tests bus bandwidth, >= 16 MiB"]
    assert every["source"].tolist() == ["N", "all"] and every["rows"].tolist() == [2, 2]
    assert every["mape_pct"].tolist() == pytest.approx([27.5, 27.5])
    assert large["rows"].tolist() == [1, 1]
    assert large["mape_pct"].tolist() == pytest.approx([5.0, 5.0])
    assert set(every["error"]) == {"in sample"}


def test_sizes_come_from_the_published_csv_when_the_validation_rows_lack_them(
    validation_rows, holdout_rows
):
    class Published:
        collectives = pd.DataFrame({"csv_row": [8, 9], "size_bytes": [2.0**30, 2.0**23]})

    rows = validation_rows.drop(columns="size_bytes")
    table = validation_table(rows, holdout_rows, Published())
    large = table[table["block"] == "nccl-tests bus bandwidth, >= 16 MiB"]
    assert large["rows"].tolist() == [1, 1]


def test_sources_with_only_rejected_rows_are_listed_under_their_quantity(
    validation_rows, holdout_rows
):
    table = validation_table(validation_rows, holdout_rows)
    throughput = table[table["block"].str.startswith("tokens/s per GPU")]
    assert "P" not in set(throughput["source"]) and "C" not in set(throughput["source"])
    power = table[table["block"] == "not predicted: power"]
    assert power["source"].tolist() == ["P"] and power["rows"].tolist() == [0]
    assert power["reason"].tolist() == ["node-level power"]
    missing = table[table["block"] == "not predicted: tokens/s per GPU"]
    assert missing["source"].tolist() == ["C"]
    assert missing["reason"].tolist() == ["GPU count not published"]
    assert missing["mape_pct"].isna().all()


@pytest.mark.parametrize(
    ("raw", "readable"),
    [
        ("GPU count not stated (8 and 128)", "GPU count not one number (source: '8 and 128')"),
        ("GPU count not stated (empty)", "GPU count not published"),
        ("tensor/pipeline split not stated", "tensor/pipeline split not stated"),
    ],
)
def test_reject_reasons_read_well(raw, readable):
    assert readable_reason(raw) == readable


def test_render_writes_three_files_and_names_both_errors(tmp_path, validation_rows, holdout_rows):
    csv, md, tex = render(tmp_path / "validation", validation_rows, holdout_rows)
    text = md.read_text()
    assert "held out" in text and "in sample" in text and "not predicted: power" in text
    assert "cal123" in tex.read_text()
    assert len(pd.read_csv(csv)) == len(validation_table(validation_rows, holdout_rows))


def test_held_out_blocks_report_source_out_interval_coverage(validation_rows, holdout_rows):
    from trainscale.sim.intervals import source_out_coverage

    table = validation_table(validation_rows, holdout_rows)
    held = table[table["error"] == "held out"].set_index("source")
    rows = source_out_coverage(holdout_rows)
    expected = 100.0 * rows.groupby("citation")["covered"].mean()
    assert held.loc["A", "interval_coverage_pct"] == pytest.approx(expected["A"])
    assert held.loc["B", "interval_coverage_pct"] == pytest.approx(expected["B"])
    assert held.loc["all", "interval_coverage_pct"] == pytest.approx(100.0 * rows["covered"].mean())
    assert (held["interval_median_width_pct"] > 0).all()


def _measured(*warnings: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": [f"run{i}" for i in range(len(warnings))],
            "config_id": [f"cfg{i}" for i in range(len(warnings))],
            "warnings": list(warnings),
        }
    )


def test_every_warned_measured_row_is_listed_last_with_its_warnings(validation_rows, holdout_rows):
    text = "logs/power.csv: power logged for 1 of the job's 2 GPUs"
    measured = _measured("", text, "a; b")
    table = validation_table(validation_rows, holdout_rows, sim_vs_measured=measured)
    warned = table[table["block"] == "measured, with warnings"]
    assert warned["source"].tolist() == ["run1: cfg1", "run2: cfg2"]
    assert warned["reason"].tolist() == [text, "a; b"]
    assert warned["rows"].tolist() == [1, 1]
    assert warned.index[-1] == table.index[-1]
    assert list(table.columns) == names(VALIDATION_TABLE_COLUMNS)


def test_no_warned_row_leaves_the_table_as_it_was(tmp_path, validation_rows, holdout_rows):
    plain = render(tmp_path / "plain", validation_rows, holdout_rows)
    quiet = render(tmp_path / "quiet", validation_rows, holdout_rows, None, _measured("", ""))
    for a, b in zip(plain, quiet, strict=True):
        assert a.read_bytes() == b.read_bytes().replace(b"quiet", b"plain")
