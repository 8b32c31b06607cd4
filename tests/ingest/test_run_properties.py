"""Property test over whole run folders (issue 23 item 9): manifest + step log + power log,
generated and then damaged at random.

Damages, one to three per example: a number of a step or power line replaced (zero, negative,
huge, tiny, ``nan``, text), a unit changed (power header ``[kW]``/``[mW]``/``[V]``, ``GiB`` →
``MiB``/``GB``), every value of a column scaled (power by 10⁻³…10³, tokens/s, memory), GPUs
dropped from or added to the power log, lines garbled, deleted or duplicated, a log given the
wrong ``kind``, and manifest numbers (``num_gpus``, ``global_batch``, ``seq_len``, the GPU)
changed.

Whatever the damage, :func:`trainscale.ingest.runs.ingest_run` either raises a
:class:`~trainscale.errors.TrainscaleError` (which the CLI prints as one line, no traceback) or
returns rows in which every measured value is finite and in range — step time, tokens/s,
memory and power positive, MFU at most 1, power per GPU between half the GPU's ``idle_w`` and
its TDP + 25 %, memory within HBM + 5 % — unless the row carries a warning. The per-step table
is held to the same bounds (it is written beside the row).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.ingest.test_damage import CATALOGUE, SHIPPED, STEPS, make_run
from trainscale.errors import TrainscaleError
from trainscale.ingest.plausibility import HBM_TOLERANCE, IDLE_FLOOR_FRACTION, TDP_TOLERANCE
from trainscale.ingest.runs import ingest_run
from trainscale.sim.model.flops import model_flops_per_token

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

#: Examples per test: about 6 s each in CI (the suite keeps under ten minutes);
#: HYPOTHESIS_PROFILE=explore draws other examples.
_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples on every run: a failure is reproducible in CI
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_KINDS = ("torchtitan", "megatron", "megatron_golden", "nvidia_smi", "dcgmi", "nccl_tests",
          "kineto_trace", "not_a_kind")  # fmt: skip
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ODD_VALUES = ("0", "-1", "-0.5", "1e30", "0.0001", "nan", "inf", "9" * 25, "1,5", "x", "")

Damage = Callable[[Path, st.DataObject], None]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def _log(run: Path, data: st.DataObject) -> Path:
    return run / "logs" / data.draw(st.sampled_from(["steps.log", "power.csv"]), label="log")


def _replace_number(run: Path, data: st.DataObject) -> None:
    path = _log(run, data)
    lines = _lines(path)
    i = data.draw(st.integers(1, len(lines) - 1), label="line")
    numbers = list(_NUMBER.finditer(lines[i]))
    if not numbers:
        return
    m = numbers[data.draw(st.integers(0, len(numbers) - 1), label="number")]
    value = data.draw(st.sampled_from(_ODD_VALUES), label="value")
    lines[i] = lines[i][: m.start()] + value + lines[i][m.end() :]
    _write(path, lines)


def _change_unit(run: Path, data: st.DataObject) -> None:
    if data.draw(st.booleans(), label="power unit"):
        path = run / "logs" / "power.csv"
        unit = data.draw(st.sampled_from(["kW", "mW", "V", "", "W/GPU"]), label="unit")
        lines = _lines(path)
        lines[0] = lines[0].replace("[W]", f"[{unit}]")
        if data.draw(st.booleans(), label="values too"):
            lines[1:] = [line.replace(" W,", f" {unit},") for line in lines[1:]]
        _write(path, lines)
    else:
        path = run / "logs" / "steps.log"
        unit = data.draw(st.sampled_from(["MiB", "GB", "TiB", "gib"]), label="unit")
        _write(path, [line.replace("GiB(", f"{unit}(") for line in _lines(path)])


def _scale(run: Path, data: st.DataObject) -> None:
    factor = data.draw(st.sampled_from([0.0, 1e-3, 0.1, 3.0, 10.0, 1e3, 1e6]), label="factor")

    def scaled(match: re.Match[str]) -> str:
        return f"{match[1]}{float(match[2].replace(',', '')) * factor:.2f}{match[3]}"

    what = data.draw(st.sampled_from(["power", "tps", "memory"]), label="column")
    pattern = {
        "power": (r"(, )(\d+\.\d+)( W,)", "power.csv"),
        "tps": (r"(tps: )([\d,]+)(\s)", "steps.log"),
        "memory": (r"(memory: )(\d+\.\d+)(GiB)", "steps.log"),
    }[what]
    path = run / "logs" / pattern[1]
    _write(path, [re.sub(pattern[0], scaled, line) for line in _lines(path)])


def _gpus(run: Path, data: st.DataObject) -> None:
    path = run / "logs" / "power.csv"
    lines = _lines(path)
    if data.draw(st.booleans(), label="drop a GPU"):
        gpu = data.draw(st.integers(0, 1), label="gpu")
        lines = [line for line in lines if f", {gpu}, " not in line]
    else:
        gpu = data.draw(st.sampled_from([1, 2, 7, 64]), label="extra gpu")
        watts = data.draw(st.sampled_from(["0.00", "150.00", "400.00"]), label="watts")
        lines += [re.sub(r", 0, [\d.]+ W,", f", {gpu}, {watts} W,", x) for x in lines[1::2]]
    _write(path, lines)


def _garble(run: Path, data: st.DataObject) -> None:
    path = _log(run, data)
    lines = _lines(path)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    action = data.draw(st.sampled_from(["char", "cut", "delete", "duplicate", "swap"]))
    if action == "char":
        j = data.draw(st.integers(0, max(len(lines[i]) - 1, 0)), label="at")
        char = data.draw(st.sampled_from([*"#|,;:%\x00\ufffd−", "\r", "  "]))
        lines[i] = lines[i][:j] + char + lines[i][j + 1 :]
    elif action == "cut":
        lines[i] = lines[i][: len(lines[i]) // 2]
    elif action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(i, lines[i])
    else:
        k = data.draw(st.integers(0, len(lines) - 1), label="with")
        lines[i], lines[k] = lines[k], lines[i]
    _write(path, lines)


def _manifest(run: Path, data: st.DataObject) -> None:
    path = run / "run.yaml"
    manifest = yaml.safe_load(path.read_text())
    if data.draw(st.booleans(), label="kind"):
        entry = manifest["logs"][data.draw(st.integers(0, 1), label="entry")]
        entry["kind"] = data.draw(st.sampled_from(_KINDS), label="new kind")
    else:
        key = data.draw(st.sampled_from(["num_gpus", "global_batch", "seq_len", "gpu"]))
        if key == "gpu":
            gpus = [*sorted(CATALOGUE.hardware.gpus), "cpu", "h300"]
            value = data.draw(st.sampled_from(gpus), label="gpu")
        else:
            value = data.draw(st.sampled_from([0, 1, 4, 8, 1024, 2**40, 2**63, -2]), label="v")
        manifest["configuration"][key] = value
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))


def _bytes(run: Path, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(["logs/steps.log", "logs/power.csv", "run.yaml"]))
    path = run / path
    raw = path.read_bytes()
    what = data.draw(st.sampled_from(["empty", "latin-1", "nul", "bom", "half", "binary"]))
    at = data.draw(st.integers(0, len(raw)), label="at")
    path.write_bytes(
        {
            "empty": b"",
            "latin-1": raw[:at] + b"\xe9" + raw[at:],
            "nul": raw[:at] + b"\x00" + raw[at:],
            "bom": b"\xef\xbb\xbf" + raw,
            "half": raw[: len(raw) // 2],
            "binary": bytes(range(256)),
        }[what]
    )


def _manifest_types(run: Path, data: st.DataObject) -> None:
    path = run / "run.yaml"
    manifest = yaml.safe_load(path.read_text())
    key = data.draw(st.sampled_from(sorted(manifest["configuration"])), label="key")
    value = data.draw(
        st.sampled_from([None, True, 2.5, "8", "1,024", "−1", [], {}, float("nan"), "inf"])
    )
    if data.draw(st.booleans(), label="delete"):
        del manifest["configuration"][key]
    else:
        manifest["configuration"][key] = value
    if data.draw(st.booleans(), label="steady"):
        manifest["steady_state"] = {"warmup_steps": data.draw(st.sampled_from([0, 11, 12, 99]))}
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))


_DAMAGES: tuple[Damage, ...] = (
    _bytes,
    _manifest_types,
    _replace_number,
    _change_unit,
    _scale,
    _gpus,
    _garble,
    _manifest,
)


# --- generated runs -----------------------------------------------------------------------------


def _stamp(seconds: float, sep: str) -> str:
    """``2025-01-01 12:MM:SS<sep>fff`` for ``seconds`` after 12:00 (under an hour)."""
    ms = round(seconds * 1000)
    return f"2025-01-01 12:{ms // 60000:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


@st.composite
def _run_spec(draw: st.DrawFn) -> dict:
    """A plausible run: format, GPUs, steps, step seconds, watts per GPU, memory, and a global
    batch that gives an MFU of 2 to 60 % (``llama2-7b`` cut to 2 layers, bf16)."""
    gpu = draw(st.sampled_from(["h100-sxm-80gb", "a100-sxm-80gb", "v100-sxm-32gb"]))
    spec = CATALOGUE.hardware.gpus[gpu]
    num_gpus = draw(st.sampled_from([1, 2, 4, 8]))
    step_s = draw(st.sampled_from([0.5, 1.0, 2.0]))
    seq_len = draw(st.sampled_from([512, 2048]))
    shape = CATALOGUE.models["llama2-7b"]
    flops = model_flops_per_token(dataclasses.replace(shape.transformer, layers=2), seq_len)
    mfu = draw(st.floats(0.02, 0.6))
    sequences = mfu * num_gpus * spec.bf16_flops_per_s * step_s / (flops * seq_len)
    return {
        "format": draw(st.sampled_from(["torchtitan", "megatron"])),
        "gpu": gpu,
        "num_gpus": num_gpus,
        "steps": draw(st.integers(4, 15)),
        "step_s": step_s,
        "watts": [
            draw(st.floats(spec.idle_w, spec.tdp_w, allow_nan=False)) for _ in range(num_gpus)
        ],
        "mem_gib": draw(st.floats(1.0, 0.9 * spec.hbm_bytes / 2**30)),
        "global_batch": num_gpus * max(1, round(sequences / num_gpus)),
        "seq_len": seq_len,
    }


def _generated_run(root: Path, spec: dict) -> Path:
    """Write ``spec`` as a run folder: step log, nvidia-smi log every 0.25 s, run.yaml."""
    run = root / "generated"
    (run / "logs").mkdir(parents=True)
    tps = spec["global_batch"] * spec["seq_len"] / (spec["step_s"] * spec["num_gpus"])
    lines = []
    for step in range(1, spec["steps"] + 1):
        t = step * spec["step_s"]
        if spec["format"] == "torchtitan":
            lines.append(
                f"[rank0]:[titan] {_stamp(t, ',')} - root - INFO - step: {step:2}  loss: "
                f"{8 - 0.1 * step:7.4f}  memory: {spec['mem_gib']:.2f}GiB(50.00%)  "
                f"tps: {round(tps):,}  tflops: 100.00  mfu: 10.00%"
            )
        else:
            lines.append(
                f" [{_stamp(t, '.')}000] iteration {step:8d}/{100:8d} | consumed samples: "
                f"{step * spec['global_batch']:12d} | elapsed time per iteration (ms): "
                f"{spec['step_s'] * 1000:.1f} | global batch size: {spec['global_batch']:5d} | "
                f"lm loss: {8 - 0.1 * step:.6E} | loss scale: 1.0 |"
            )
    (run / "logs" / "steps.log").write_text("\n".join(lines) + "\n")
    power = ["timestamp, index, power.draw [W], memory.used [MiB]"]
    for k in range(1, round(spec["steps"] * spec["step_s"] / 0.25) + 1):
        stamp = _stamp(0.25 * k, ".").replace("-", "/")
        for gpu, watts in enumerate(spec["watts"]):
            power.append(f"{stamp}, {gpu}, {watts:.2f} W, {spec['mem_gib'] * 1024:.0f} MiB")
    (run / "logs" / "power.csv").write_text("\n".join(power) + "\n")
    manifest = {
        "run_id": "generated",
        "description": "A generated run.",
        "configuration": {
            "model": "llama2-7b",
            "layers": 2,
            "seq_len": spec["seq_len"],
            "global_batch": spec["global_batch"],
            "micro_batch": 1,
            "gpu": spec["gpu"],
            "num_gpus": spec["num_gpus"],
            "tp": 1,
            "pp": 1,
            "sharding": "fsdp",
        },
        "logs": [
            {"path": "logs/steps.log", "kind": spec["format"]},
            {"path": "logs/power.csv", "kind": "nvidia_smi"},
        ],
        "steady_state": {"warmup_steps": 1},
    }
    (run / "run.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return run


# --- the bounds a returned value must hold (or carry a warning) ---------------------------------


def _problems(frame: pd.DataFrame, gpu_key: object, *, per_step: bool) -> list[str]:
    """What in ``frame`` (result rows or per-step rows) is NaN where a value is due, inf,
    negative or out of range; '' entries are fine."""
    gpu = CATALOGUE.hardware.gpus.get(str(gpu_key))
    mem, power = ("mem_gib", "power_w_per_gpu") if per_step else ("mem_gib_per_gpu",
                                                                  "power_w_per_gpu")  # fmt: skip
    bounds: dict[str, tuple[float, float]] = {
        "step_time_s": (0.0, math.inf),
        "tokens_per_s_per_gpu": (0.0, math.inf),
        "mfu": (0.0, 1.0),
        mem: (0.0, gpu.hbm_bytes / 2**30 * (1 + HBM_TOLERANCE) if gpu else math.inf),
        power: (
            IDLE_FLOOR_FRACTION * gpu.idle_w if gpu and not per_step else 0.0,
            gpu.tdp_w * (1 + TDP_TOLERANCE) if gpu else math.inf,
        ),
    }
    if not per_step:
        bounds.update(tokens_per_s=(0.0, math.inf), hfu=(0.0, 1.0))
    out = []
    for column, (lo, hi) in bounds.items():
        if column not in frame:
            continue
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
        for v in values:
            if np.isinf(v) or (not np.isnan(v) and not lo <= v <= hi):
                out.append(f"{column} = {v!r} outside [{lo:g}, {hi:g}]")
    for column in frame.columns:  # every other number: a time, a rate, watts, joules, GiB
        if frame[column].dtype.kind == "f" and column != "loss":  # a loss is not a measurement
            values = frame[column].to_numpy(float)
            if np.isinf(values).any() or (values < 0).any():
                out.append(f"{column} holds {values[np.isinf(values) | (values < 0)][:3]}")
    return out


def _due(results: pd.DataFrame, *, titan: bool = True) -> list[str]:
    """The values the undamaged run has, NaN in a returned row without a warning.

    A measured rate is due where the logs or the manifest state what it needs: tokens/s per
    GPU where the log prints it (torchtitan ``tps``, with ``titan``) or the manifest gives
    ``global_batch``, ``seq_len`` and ``num_gpus``; the job's tokens/s where ``num_gpus`` is
    stated and the log prints ``tps`` or the manifest gives the batch and sequence;
    memory where the log prints it (torchtitan). A third-party manifest may leave these out,
    and the value is then unknown, not wrong.
    """
    stated = results[["global_batch", "seq_len"]].notna().all(axis=None)
    gpus = results["num_gpus"].notna().all()
    due = ["step_time_s"]
    if titan or (stated and gpus):
        due.append("tokens_per_s_per_gpu")
    if gpus and (titan or stated):
        due.append("tokens_per_s")
    if titan:
        due.append("mem_gib_per_gpu")
    return [f"{c} is NaN" for c in due if results[c].isna().any()]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The damage tests' synthetic run: 12 torchtitan steps, 2 H100s in an nvidia-smi log."""
    return make_run(tmp_path_factory.mktemp("run_properties"))


def test_the_undamaged_run_meets_every_bound(clean_run: Path) -> None:
    results, steps = ingest_run(clean_run, **SHIPPED)
    assert results["warnings"].tolist() == [""]
    assert _problems(results, "h100-sxm-80gb", per_step=False) == []
    assert _problems(steps, "h100-sxm-80gb", per_step=True) == []
    assert _due(results) == []
    assert len(steps) == STEPS


def test_the_bounds_catch_what_they_name(clean_run: Path) -> None:
    """The checker itself: each out-of-range value of a clean row is found."""
    results, steps = ingest_run(clean_run, **SHIPPED)
    for column, value in (
        ("mfu", 1.2),
        ("power_w_per_gpu", 60.0),  # below half the H100's 140 W idle draw
        ("power_w_per_gpu", 900.0),  # above 700 W + 25 %
        ("mem_gib_per_gpu", 90.0),  # above 80 GiB + 5 %
        ("step_time_s", -1.0),
        ("exposed_comm_s", math.inf),
    ):
        assert _problems(results.assign(**{column: value}), "h100-sxm-80gb", per_step=False)
    assert _due(results.assign(tokens_per_s=np.nan)) == ["tokens_per_s is NaN"]
    assert _problems(steps.assign(mem_gib=4000.0), "h100-sxm-80gb", per_step=True)


@_SETTINGS
@given(data=st.data())
def test_a_damaged_run_is_an_error_or_in_range_or_warned(
    clean_run: Path, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / clean_run.name
        shutil.copytree(clean_run, run)
        ingested = _damage_and_ingest(run, data)
        if ingested is None:
            return
        results, steps = ingested
    event("warned" if results["warnings"].str.len().gt(0).any() else "returned clean")
    _assert_in_range_or_warned(results, steps)


def _damage_and_ingest(run: Path, data: st.DataObject) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Apply 1-3 drawn damages to ``run`` and ingest it; None when ingest raised a named error
    (whose message must not be empty)."""
    damages = data.draw(st.lists(st.sampled_from(_DAMAGES), min_size=1, max_size=3))
    for damage in sorted(damages, key=lambda d: d is _bytes):  # bytes last: the rest edit text
        damage(run, data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ingest_run(run, **SHIPPED)
    except TrainscaleError as error:
        assert str(error).strip()  # a message the CLI prints on one line
        event("error")
        return None


def _assert_in_range_or_warned(
    results: pd.DataFrame, steps: pd.DataFrame, *, titan: bool = True
) -> None:
    gpu = results["gpu"].iloc[0]
    for i in range(len(results)):
        row = results.iloc[[i]]
        if row["warnings"].iloc[0]:
            continue  # a warned row may hold a suspicious value: the warning says so
        problems = _problems(row, gpu, per_step=False)
        problems += _due(row, titan=titan)
        assert not problems, f"{problems} with no warning"
        problems = _problems(steps, gpu, per_step=True)
        assert not problems, f"per-step table: {problems} with no warning"


@settings(_SETTINGS, max_examples=60)  # each example ingests twice, bigger runs
@given(spec=_run_spec(), data=st.data())
def test_a_generated_run_is_read_clean_and_its_damage_is_caught_or_warned(
    spec: dict, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run = _generated_run(Path(folder), spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clean, _ = ingest_run(run, **SHIPPED)
        assert clean["warnings"].tolist() == [""], spec
        assert clean["tokens_per_s"].iloc[0] == pytest.approx(
            spec["global_batch"] * spec["seq_len"] / spec["step_s"], rel=1e-3
        )
        assert clean["power_w_per_gpu"].iloc[0] == pytest.approx(
            sum(spec["watts"]) / spec["num_gpus"], abs=0.01
        )
        ingested = _damage_and_ingest(run, data)
        if ingested is None:
            return
        results, steps = ingested
    event("warned" if results["warnings"].str.len().gt(0).any() else "returned clean")
    _assert_in_range_or_warned(results, steps, titan=spec["format"] == "torchtitan")
