"""Where a pilot calibration helps (trainscale.calibrate.pilot_reach) and what happens beyond."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.library import pytorch_h100_pilots
from trainscale.calibrate.pilot_reach import REACH_COLUMNS, capped_bins, reach, reach_evidence
from trainscale.calibrate.pilot_transfer import transfer_evidence
from trainscale.calibrate.user import calibrate_user
from trainscale.published.measurements import load_published
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.pilot_intervals import BIN_EDGES

CATALOGUE = load_catalogue()


def _errors(rows: list[tuple[str, float, float, float, float]]) -> pd.DataFrame:
    """Pilot-error rows from (citation, log2 distance, observed, pilot-predicted,
    base-predicted); the shipped interval is +-10 % around every base prediction."""
    frame = pd.DataFrame(
        rows, columns=["citation", "log2_distance", "observed_tokens_per_s_per_gpu",
                       "pilot_predicted_tokens_per_s_per_gpu",
                       "base_predicted_tokens_per_s_per_gpu"],
    )  # fmt: skip
    observed = frame["observed_tokens_per_s_per_gpu"]
    for kind in ("pilot", "base"):
        frame[f"{kind}_ape_pct"] = 100 * (frame[f"{kind}_predicted_tokens_per_s_per_gpu"]
                                          / observed - 1).abs()  # fmt: skip
    frame["weak_scaling_ape_pct"] = 5.0
    frame["shipped_lower_log_factor"] = math.log(0.9)
    frame["shipped_upper_log_factor"] = math.log(1.1)
    return frame


def test_every_source_weighs_the_same_in_a_bin() -> None:
    # bin 1 (0.5 <= d < 1.5): source A, ten rows the pilot gets 1 % off and the base 2 %; source B,
    # one row the pilot gets 40 % off and the base 10 %: per source, pilot (1 + 40) / 2 = 20.5 %
    # against base (2 + 10) / 2 = 6 %, although the pilot wins ten rows of eleven
    rows = [("A", 1.0, 100.0, 101.0, 102.0)] * 10 + [("B", 1.0, 100.0, 140.0, 110.0)]
    evidence = reach_evidence(_errors(rows))
    assert list(evidence.columns) == list(REACH_COLUMNS)
    assert len(evidence) == len(BIN_EDGES) + 1
    one = evidence.iloc[1]
    assert one["rows"] == 11 and one["sources"] == 2
    assert one["pilot_mape_pct"] == pytest.approx(20.5)
    assert one["base_mape_pct"] == pytest.approx(6.0)
    assert not one["pilot_helps"]
    # the shipped +-10 % around the pilot prediction covers A (all) but not B: 50 % per source
    assert one["shipped_width_covered_pct"] == pytest.approx(50.0)
    assert not one["capped_at_shipped"]


def test_the_reach_ends_at_the_first_bin_where_the_shipped_level_does_better() -> None:
    rows = [
        ("A", 1.0, 100.0, 101.0, 110.0),  # bin 1: the pilot helps
        ("A", 2.0, 100.0, 102.0, 110.0),  # bin 2: helps, largest distance 2.3 below
        ("A", 2.3, 100.0, 102.0, 110.0),
        ("A", 3.0, 100.0, 120.0, 110.0),  # bin 3: the shipped level does better
        ("A", 5.0, 100.0, 101.0, 110.0),  # bin 4: helps again, but past the break
    ]
    evidence = reach_evidence(_errors(rows))
    assert evidence["pilot_helps"].tolist() == [False, True, True, False, True]
    assert reach(evidence) == pytest.approx(2.3)


def test_a_bin_without_rows_ends_the_reach_and_is_capped() -> None:
    evidence = reach_evidence(_errors([("A", 1.0, 100.0, 101.0, 110.0),
                                       ("A", 4.0, 100.0, 101.0, 110.0)]))  # fmt: skip
    assert evidence["rows"].tolist() == [0, 1, 0, 0, 1]
    assert reach(evidence) == pytest.approx(1.0)
    assert capped_bins(evidence)[0] and capped_bins(evidence)[2]


def test_where_the_pilot_never_helps_the_reach_is_the_pilots_own_scale() -> None:
    evidence = reach_evidence(_errors([("A", 1.0, 100.0, 130.0, 101.0)]))
    assert reach(evidence) == BIN_EDGES[0]


def test_transfer_evidence_weighs_sources_and_says_what_is_carried() -> None:
    transfers = pd.DataFrame({
        "series": "s", "citation": ["A", "A", "B", "A"],
        "relation": ["another GPU", "another GPU", "another GPU", "another model"],
        "log2_distance": 1.0, "pilot_ape_pct": [2.0, 4.0, 20.0, 1.0],
        "base_ape_pct": [5.0, 5.0, 5.0, 3.0],
    })  # fmt: skip
    table = transfer_evidence(transfers).set_index("relation")
    assert table.loc["another GPU", "pilot_mape_pct"] == pytest.approx((3.0 + 20.0) / 2)
    assert not table.loc["another GPU", "carried"]
    assert table.loc["another model", "carried"]
    assert table.loc["another layout", "rows"] == 0 and not table.loc["another layout", "carried"]


def test_beyond_the_reach_the_shipped_level_and_interval_and_the_flag(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    from trainscale import predict

    catalogue = CATALOGUE
    published = load_published(
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys
    )
    mine = tmp_path / "mine.yaml"
    pilots = pytorch_h100_pilots(tmp_path)
    calibrate_user(pilots, mine, base=load_calibration(), published=published,
                   catalogue=catalogue, pilot_errors=shipped_pilot_errors)  # fmt: skip
    block = yaml.safe_load(mine.read_text())["intervals"]["pilot"]
    limit = float(block["reach_log2_distance"])
    assert "reach_rule" in block and all("capped_at_shipped" in b for b in block["bins"])
    near, far = 16, 8 * 2 ** (math.floor(limit) + 1)  # 1 doubling, and past the reach
    rows = pd.DataFrame([
        {"model": "llama3-8b", "num_gpus": n, "global_batch": 4 * n, "seq_len": 8192,
         "micro_batch": 1, "gpu": "h100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp",
         "recompute": "none", "precision": "bf16", "framework": "pytorch"}
        for n in (near, far)
    ])  # fmt: skip
    shipped = predict(rows)
    calibrated = predict(rows, calibration=load_calibration(mine))
    flags = calibrated["extrapolation"].fillna("")
    assert "beyond_pilot_reach" not in flags.iloc[0]
    assert calibrated["tokens_per_s_per_gpu"].iloc[0] < shipped["tokens_per_s_per_gpu"].iloc[0]
    assert f"beyond_pilot_reach:{np.log2(far / 8):.3g}>{limit:.3g}" in flags.iloc[1]
    assert calibrated["tokens_per_s_per_gpu"].iloc[1] == shipped["tokens_per_s_per_gpu"].iloc[1]
    # the shipped conformal interval, its coverage facts counting the two measured rows as well
    for column in ("tokens_per_s_per_gpu_lo", "tokens_per_s_per_gpu_hi"):
        assert calibrated[column].iloc[1] == pytest.approx(shipped[column].iloc[1], rel=1e-3)


def test_where_the_shipped_width_was_enough_the_interval_is_never_wider(
    tmp_path: Path, shipped_pilot_errors: pd.DataFrame
) -> None:
    from trainscale import predict
    from trainscale.sim.pilot_intervals import distance

    published = load_published(
        hardware=CATALOGUE.hardware, models=CATALOGUE.models, frameworks=CATALOGUE.framework_keys
    )
    mine = tmp_path / "mine.yaml"
    pilots = pytorch_h100_pilots(tmp_path)
    calibrate_user(pilots, mine, base=load_calibration(), published=published,
                   catalogue=CATALOGUE, pilot_errors=shipped_pilot_errors)  # fmt: skip
    pilot = load_calibration(mine).intervals.pilot
    counts = np.array([8, 16, 32, 64, 128, 256, 512])
    counts = counts[distance(counts, np.array([8])) <= pilot.reach]
    rows = pd.DataFrame([
        {"model": "llama3-8b", "num_gpus": int(n), "global_batch": 4 * int(n), "seq_len": 8192,
         "micro_batch": 1, "gpu": "h100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp",
         "recompute": "none", "precision": "bf16", "framework": "pytorch"}
        for n in counts
    ])  # fmt: skip
    shipped = predict(rows)
    calibrated = predict(rows, calibration=load_calibration(mine))
    ratio = lambda t: np.log(t["tokens_per_s_per_gpu_hi"] / t["tokens_per_s_per_gpu"])  # noqa: E731
    low = lambda t: np.log(t["tokens_per_s_per_gpu"] / t["tokens_per_s_per_gpu_lo"])  # noqa: E731
    capped = pilot.capped_at(counts)
    assert capped.any()
    tol = 1e-9
    assert (ratio(calibrated)[capped] <= ratio(shipped)[capped] + tol).all()
    assert (low(calibrated)[capped] <= low(shipped)[capped] + tol).all()


def test_the_cli_says_how_far_the_level_reaches_and_what_lies_beyond(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainscale.cli import main

    mine = tmp_path / "mine.yaml"
    assert (
        main(["calibrate", "--measurements", str(pytorch_h100_pilots(tmp_path)), "-o", str(mine)])
        == 0
    )
    reach_text = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("reach:"))
    limit = load_calibration(mine).intervals.pilot.reach
    assert f"up to {limit:g} doublings" in reach_text and "beyond_pilot_reach" in reach_text
    far = str(8 * 2 ** (math.floor(limit) + 1))
    args = ["predict", "--model", "llama3-8b", "--gpu", "h100-sxm-80gb", "--num-gpus", far,
            "--global-batch", "4096", "--calibration", str(mine)]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "beyond_pilot_reach:" in out and "predicted with the shipped level and interval" in out
