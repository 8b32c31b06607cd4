"""Damaged logs never pass silently: each damage is a named error, or a warning kept in the
row's ``warnings`` column, or gives exactly the undamaged result (user trial item 30).

The hypothesis test damages the step log or the power log of a synthetic run at random —
duplicate, shuffle or delete lines, negate or scale power by an implausible factor, replace a
character by one that cannot be part of a number — and accepts only: the undamaged numbers,
different numbers *with* a warning, or an :class:`InputFileError` naming the damaged file.
(Damage that produces another plausible log, e.g. a power value 1 % off, cannot be detected by
any parser and is not drawn.)
"""

from __future__ import annotations

import math
import re
import shutil
import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest._traces import synthetic_trace, write_trace
from trainscale.errors import InputFileError
from trainscale.ingest.runs import ingest_run, write_ingested
from trainscale.io.yaml import load_yaml
from trainscale.sim.catalogue import load_catalogue

REPO = Path(__file__).resolve().parents[2]
#: The catalogues a run is checked and ingested with: the shipped ones.
CATALOGUE = load_catalogue()
SHIPPED = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}
STEPS = 12
METRICS = ("step_time_s", "tokens_per_s", "n_steps", "power_w_per_gpu", "mem_gib_per_gpu")


def _titan_line(step: int, second: int, tps: int) -> str:
    return (
        f"[rank0]:[titan] 2025-01-01 12:00:{second:02d},000 - root - INFO - step: {step:2}  "
        f"loss: {8 - 0.1 * step:7.4f}  grad_norm:  1.0000  memory: 40.00GiB(50.00%)  "
        f"tps: {tps:,}  tflops: 100.00  mfu: 10.00%"
    )


def make_run(root: Path, *, harness: bool = True) -> Path:
    """STEPS steps one second apart, tps 1000 + 10·step; 2 GPUs at (200 + step) and
    (300 + step) W, sampled every 0.25 s; warm-up 2."""
    run = root / "synth"
    (run / "logs").mkdir(parents=True)
    lines = ["[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - Starting job"]
    lines += [_titan_line(s, s, 1000 + 10 * s) for s in range(1, STEPS + 1)]
    (run / "logs" / "steps.log").write_text("\n".join(lines) + "\n")
    power = ["timestamp, index, power.draw [W], utilization.gpu [%]"]
    for step in range(1, STEPS + 1):
        for ms in (250, 500, 750, 1000):
            second, frac = step - 1 + ms // 1000, ms % 1000
            for gpu, base in ((0, 200), (1, 300)):
                power.append(
                    f"2025/01/01 12:00:{second:02d}.{frac:03d}, {gpu}, {base + step:.2f} W, 90 %"
                )
    (run / "logs" / "power.csv").write_text("\n".join(power) + "\n")
    manifest = {
        "run_id": "synth",
        "description": "Synthetic torchtitan run with a power log.",
        "configuration": {
            "model": "llama2-7b",
            "seq_len": 1024,
            "global_batch": 2,
            "micro_batch": 1,
            "gpu": "h100-sxm-80gb",
            "num_gpus": 2,
            "tp": 1,
            "pp": 1,
            "sharding": "fsdp",
        },
        "logs": [
            {"path": "logs/steps.log", "kind": "torchtitan"},
            {"path": "logs/power.csv", "kind": "nvidia_smi"},
        ],
        "steady_state": {"warmup_steps": 2},
    }
    if harness:
        manifest["harness_timing"] = {
            "tokens_per_s": 1.0,
            "step_time_s": 1.0,
            "steps": STEPS - 2,
            "tokens": 1,
        }
    (run / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return run


def _metrics(results) -> dict[str, float]:
    row = results.iloc[0]
    return {name: float(row[name]) for name in METRICS}


def _ingest(run: Path):
    """ingest_run with warnings silenced (they are checked in the ``warnings`` column)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ingest_run(run, **SHIPPED)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


# --- one test per kind of damage ------------------------------------------------------------


def test_undamaged_run_has_no_warnings(tmp_path):
    results, _ = _ingest(make_run(tmp_path))
    assert results["warnings"].tolist() == [""]
    assert _metrics(results)["power_w_per_gpu"] == pytest.approx(250 + 7.5)


def test_exact_duplicate_step_lines_are_dropped_with_a_warning(tmp_path):
    clean = _metrics(_ingest(make_run(tmp_path / "a"))[0])
    run = make_run(tmp_path / "b")
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    _write_lines(log, lines[:5] + lines[3:5] + lines[5:])  # steps 3 and 4 repeated
    with pytest.warns(RuntimeWarning, match=rf"{log}:6: 2 exact duplicate step line\(s\)"):
        results, steps = ingest_run(run, **SHIPPED)
    assert _metrics(results) == clean
    assert len(steps) == STEPS
    assert "2 exact duplicate step line(s) dropped (line(s) 6, 7)" in results["warnings"][0]


def test_conflicting_duplicate_step_is_an_error(tmp_path):
    run = make_run(tmp_path)
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    lines.insert(6, lines[5].replace("tps: 1,050", "tps: 9,999"))
    _write_lines(log, lines)
    with pytest.raises(InputFileError, match=rf"^{log}:7: step 5 is logged again with different"):
        ingest_run(run, **SHIPPED)


def test_shuffled_steps_are_an_error_naming_file_line_and_step(tmp_path):
    run = make_run(tmp_path)
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    lines[4], lines[5] = lines[5], lines[4]  # steps 5 then 4
    _write_lines(log, lines)
    with pytest.raises(InputFileError, match=rf"^{log}:6: step 4 comes after step 5 \(line 5\)"):
        ingest_run(run, **SHIPPED)


def test_step_clock_going_back_is_an_error(tmp_path):
    run = make_run(tmp_path)
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    lines[7] = lines[7].replace("12:00:07", "12:00:03")
    _write_lines(log, lines)
    with pytest.raises(InputFileError, match=rf"^{log}:8: the clock goes back: step 7"):
        ingest_run(run, **SHIPPED)


def test_missing_step_line_is_a_warning_without_harness(tmp_path):
    run = make_run(tmp_path, harness=False)
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    del lines[6]  # step 6
    _write_lines(log, lines)
    with pytest.warns(RuntimeWarning, match=r"step numbers advance unevenly"):
        results, _ = ingest_run(run, **SHIPPED)
    assert "steps.log:7: step numbers advance unevenly (usually by 1)" in results["warnings"][0]


def test_negative_power_is_an_error_naming_file_and_line(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    lines = _lines(power)
    lines[9] = lines[9].replace(", 202.00 W", ", -328.00 W")
    _write_lines(power, lines)
    with pytest.raises(InputFileError, match=rf"^{power}:10: negative power -328 W"):
        ingest_run(run, **SHIPPED)


def test_power_above_tdp_is_an_error(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    lines = _lines(power)
    lines[10] = lines[10].replace(", 302.00 W", ", 3020.00 W")
    _write_lines(power, lines)
    with pytest.raises(
        InputFileError,
        match=rf"^{power}:11: power 3020 W is above what a h100-sxm-80gb can draw \(TDP 700 W",
    ):
        ingest_run(run, **SHIPPED)


def test_power_clock_going_back_is_an_error(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    lines = _lines(power)
    lines[20] = lines[20].replace("12:00:02", "12:00:01")
    _write_lines(power, lines)
    with pytest.raises(InputFileError, match=rf"^{power}:21: the clock goes back"):
        ingest_run(run, **SHIPPED)


def test_power_that_misses_the_steps_is_a_kept_warning(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    _write_lines(power, [line.replace("12:00:", "13:00:") for line in _lines(power)])
    with pytest.warns(RuntimeWarning, match=r"cover none of the 10 steady steps"):
        results, _ = ingest_run(run, **SHIPPED)
    assert math.isnan(results["power_w_per_gpu"][0])
    assert f"{power}: power samples (2025-01-01 13:00:00.250000" in results["warnings"][0]


def test_incomplete_power_poll_is_a_warning(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    lines = _lines(power)
    del lines[30]
    _write_lines(power, lines)
    with pytest.warns(RuntimeWarning, match=r"poll\(s\) lack some of the 2 GPUs"):
        results, _ = ingest_run(run, **SHIPPED)
    assert "lack some of the 2 GPUs" in results["warnings"][0]


def test_nothing_is_written_for_a_damaged_run(tmp_path):
    run = make_run(tmp_path)
    power = run / "logs" / "power.csv"
    _write_lines(power, [line.replace(", 202.00 W", ", -1.00 W") for line in _lines(power)])
    out = tmp_path / "out"
    with pytest.raises(InputFileError, match="negative power"):
        write_ingested(run, out / "synth.parquet", out / "synth_steps.parquet", **SHIPPED)
    assert not out.exists() or list(out.iterdir()) == []


def test_warnings_reach_the_parquet(tmp_path):
    run = make_run(tmp_path)
    log = run / "logs" / "steps.log"
    lines = _lines(log)
    _write_lines(log, [*lines, lines[-1]])
    out = tmp_path / "out"
    with pytest.warns(RuntimeWarning):
        write_ingested(run, out / "synth.parquet", **SHIPPED)
    import pandas as pd

    assert "exact duplicate" in pd.read_parquet(out / "synth.parquet")["warnings"][0]


# --- traces of different jobs ---------------------------------------------------------------


def _trace_run(tmp_path: Path, rank1: dict) -> Path:
    run = tmp_path / "traced"
    (run / "traces").mkdir(parents=True)
    write_trace(run / "traces" / "rank0.json.gz", synthetic_trace(rank=0, world_size=2))
    write_trace(run / "traces" / "rank1.json.gz", rank1)
    manifest = {
        "run_id": "traced",
        "description": "Two ranks.",
        "configuration": {"num_gpus": 2},
        "logs": [
            {"path": "traces/rank0.json.gz", "kind": "kineto_trace"},
            {"path": "traces/rank1.json.gz", "kind": "kineto_trace"},
        ],
    }
    (run / "run.yaml").write_text(yaml.safe_dump(manifest))
    return run


def test_traces_of_one_job_are_accepted(tmp_path):
    results, _ = ingest_run(_trace_run(tmp_path, synthetic_trace(rank=1, world_size=2)), **SHIPPED)
    assert results["warnings"].tolist() == [""]


def test_trace_from_another_job_is_an_error_naming_both_files_and_the_field(tmp_path):
    other = synthetic_trace(rank=1, world_size=128)
    run = _trace_run(tmp_path, other)
    with pytest.raises(
        InputFileError,
        match=r"rank1\.json\.gz: not from the same job as .*rank0\.json\.gz: "
        r"distributedInfo\.world_size is 128 here but 2 there",
    ):
        ingest_run(run, **SHIPPED)


def test_trace_with_another_backend_is_an_error(tmp_path):
    other = synthetic_trace(rank=1, world_size=2)
    other["distributedInfo"]["backend"] = "gloo"
    with pytest.raises(InputFileError, match=r"distributedInfo\.backend is 'gloo' here"):
        ingest_run(_trace_run(tmp_path, other), **SHIPPED)


def test_trace_with_other_process_group_ranks_is_an_error(tmp_path):
    docs = [synthetic_trace(rank=r, world_size=2) for r in (0, 1)]
    for doc, ranks in zip(docs, ([0, 1], [1, 2]), strict=True):
        doc["distributedInfo"]["pg_config"] = [
            {"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": ranks}
        ]
    run = _trace_run(tmp_path, docs[1])
    write_trace(run / "traces" / "rank0.json.gz", docs[0])
    with pytest.raises(InputFileError, match=r"pg_config\[pg_name='0'\]\.ranks is \[1, 2\] here"):
        ingest_run(run, **SHIPPED)


def test_shipped_128_rank_trace_in_the_gloo_run_is_an_error(tmp_path):
    """User trial item 30: a rank-1 trace of a 128-GPU NCCL job swapped into the 2-rank run."""
    run = tmp_path / "cpu_gloo_2rank_tiny"
    shutil.copytree(REPO / "data" / "runs" / "cpu_gloo_2rank_tiny", run)
    foreign = REPO / "data" / "runs" / "hta_samples" / "traces"
    shutil.copy(
        foreign / "hta_trace_filter_sampled_rank-1.json.gz", run / "traces" / "trace_rank1.json.gz"
    )
    with pytest.raises(InputFileError, match=r"trace_rank1\.json\.gz: not from the same job as "
                       r".*trace_rank0\.json\.gz: distributedInfo\.backend is 'nccl' here but "
                       r"'gloo' there"):  # fmt: skip
        ingest_run(run, **SHIPPED)


def test_trace_world_size_must_match_num_gpus(tmp_path):
    run = _trace_run(tmp_path, synthetic_trace(rank=1, world_size=2))
    manifest = yaml.safe_load((run / "run.yaml").read_text())
    manifest["configuration"]["num_gpus"] = 4
    (run / "run.yaml").write_text(yaml.safe_dump(manifest))
    with pytest.raises(InputFileError, match=r"rank0\.json\.gz: distributedInfo\.world_size is 2 "
                       r"but the run's num_gpus is 4"):  # fmt: skip
        ingest_run(run, **SHIPPED)


# --- duplicate YAML keys ----------------------------------------------------------------------


def test_duplicate_key_in_a_manifest_names_file_line_and_key(tmp_path):
    run = make_run(tmp_path)
    text = (run / "run.yaml").read_text()
    text = text.replace("  num_gpus: 2\n", "  num_gpus: 2\n  num_gpus: 4\n")
    (run / "run.yaml").write_text(text)
    line = text.splitlines().index("  num_gpus: 4") + 1
    with pytest.raises(
        InputFileError,
        match=rf"^{run / 'run.yaml'}:{line}: invalid YAML: duplicate key 'num_gpus' "
        rf"\(first at line {line - 1}\)",
    ):
        ingest_run(run, **SHIPPED)


def test_duplicate_key_in_a_catalogue_or_study_names_file_line_and_key(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text("name: x\nsweep:\n  num_gpus: [8]\n  sharding: [ddp]\n  sharding: [fsdp]\n")
    with pytest.raises(InputFileError, match=rf"^{path}:5: invalid YAML: duplicate key 'sharding'"):
        load_yaml(path)
    path.write_text("a: &base {x: 1}\nb:\n  <<: *base\n  x: 2\n")  # merge keys may be overridden
    assert load_yaml(path) == {"a": {"x": 1}, "b": {"x": 2}}


# --- random damage ----------------------------------------------------------------------------

_NOT_NUMERIC = "xQ#?~!"


@st.composite
def damage(draw: st.DrawFn) -> tuple[str, str, int, int, str]:
    target = draw(st.sampled_from(["steps.log", "power.csv"]))
    kind = draw(st.sampled_from(["duplicate", "shuffle", "delete", "corrupt", "negate", "scale"]))
    if target == "steps.log" and kind in ("negate", "scale"):
        kind = "corrupt"
    n_lines = STEPS + 1 if target == "steps.log" else 1 + STEPS * 8
    line = draw(st.integers(0, n_lines - 1))
    other = draw(st.integers(0, n_lines - 1))
    char = draw(st.sampled_from(_NOT_NUMERIC))
    return target, kind, line, other, char


def _damage(run: Path, target: str, kind: str, line: int, other: int, char: str) -> None:
    path = run / "logs" / target
    lines = _lines(path)
    if kind == "duplicate":
        lines.insert(line + 1, lines[line])
    elif kind == "shuffle":
        lines[line], lines[other] = lines[other], lines[line]
    elif kind == "delete":
        del lines[line]
    elif kind == "corrupt":
        text = lines[line]
        position = other % max(len(text), 1)
        lines[line] = text[:position] + char + text[position + 1 :]
    else:
        factor = -1.0 if kind == "negate" else 10.0
        lines[line] = re.sub(
            r", (\d+\.\d+) W", lambda m: f", {float(m[1]) * factor:.2f} W", lines[line]
        )
    _write_lines(path, lines)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damage())
def test_random_damage_is_harmless_warned_or_a_named_error(tmp_path_factory, case):
    root = tmp_path_factory.mktemp("damage")
    clean = _metrics(_ingest(make_run(root / "clean"))[0])
    run = make_run(root / "damaged")
    _damage(run, *case)
    target = case[0]
    try:
        results, _ = _ingest(run)
    except InputFileError as error:
        assert str(error).startswith(str(run)), error  # names the damaged file
        assert target in str(error) or "run.yaml" in str(error), error
        return
    got = _metrics(results)
    same = all(
        (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b) for a, b in
        zip(got.values(), clean.values(), strict=True)
    )  # fmt: skip
    assert same or results["warnings"][0], f"{case}: silently {got} instead of {clean}"
