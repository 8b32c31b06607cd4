"""The recipes of docs/recipes/, followed for real with no code edit.

The shipped catalogues are copied to a temporary data folder; a GPU (a copy of H100 80GB under
another key, label and device name, 1.2x its BF16 peak), a model (a 36-layer Llama-2 7B) and a
framework (a copy of the ``pytorch`` profile that, like DeepSpeed, refuses sharded data
parallelism under pipeline parallelism) are added to it as the recipes say. Then, with
``TRAINSCALE_DATA`` pointing at the folder, ``trainscale predict`` predicts them, a figure is
plotted with the new GPU, and ``trainscale calibrate --measurements`` fits the new framework's
GEMM offset, which exists only because the framework is in the file.

The commands run with ``TRAINSCALE_DATA`` set, as a user runs them: the framework list is the
profile keys of the catalogue a command loads from the data folder
(``Catalogue.framework_keys``), read when the command runs. They run in this process
(``run_cli``), except one that reads the catalogue and calibration in a fresh process.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml

import trainscale
from tests.conftest import run_cli
from trainscale.paths import data_dir
from trainscale.sim.catalogue import load_catalogue

FRAMEWORKS = load_catalogue().framework_keys
"""The shipped framework list (the profile keys of ``data/frameworks.yaml``)."""
GPU = "x100-sxm-80gb"
GPU_LABEL = "X100 80GB"
SYSTEM = "dgx-x100"
MODEL = "mymodel-9b"
MODEL_LABEL = "MyModel 9B"
FRAMEWORK = "mystack"
BASES = (
    "gemm_efficiency",
    "attention_efficiency",
    "elementwise_traffic",
    "fp8_gemm",
    "overlap_slowdown",
)
MEASURED_SHARE = 0.8
"""The measured rows of the calibration recipe run at this share of the prediction."""


def _edit(path: Path, change: Callable[[dict], None]) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def _add_gpu(hardware: dict) -> None:
    """docs/recipes/add-a-gpu.md: the GPU, its names, its node and its default system."""
    gpu = dict(hardware["gpus"]["h100-sxm-80gb"])
    gpu.update(
        label=GPU_LABEL,
        color_slot=9,
        device_names=["X100"],
        aliases=["X100"],
        description="a test GPU: H100 80GB with 1.2x its BF16 peak",
        bf16_tflops=1.2 * gpu["bf16_tflops"],
    )
    hardware["gpus"][GPU] = gpu
    hardware["systems"][SYSTEM] = dict(
        hardware["systems"]["dgx-h100"], gpu=GPU, description="a test node of 8 X100"
    )
    hardware["default_system"][GPU] = SYSTEM


def _add_model(models: dict) -> None:
    """docs/recipes/add-a-model.md: the shape, its label and aliases."""
    model = dict(models["models"]["llama2-7b"])
    model.update(
        label=MODEL_LABEL, color_slot=7, aliases=[MODEL_LABEL], layers=36, description="a test"
    )
    models["models"][MODEL] = model


def _add_framework(frameworks: dict) -> None:
    """docs/recipes/add-a-framework-behaviour.md: a copy of a profile under a new key, with one
    behaviour changed and its source."""
    profile = dict(frameworks["profiles"]["pytorch"])
    profile.update(
        description="a test stack: PyTorch's profile without sharded pipeline stages",
        aliases=["MyStack"],
        pipeline_shardings=["ddp", "zero1"],
        sources={**profile["sources"], "pipeline_shardings": "the recipe test"},
    )
    frameworks["profiles"][FRAMEWORK] = profile


#: The published sources the data folder keeps (:func:`_keep_sources`).
PUBLISHED_SOURCES = (
    "Shoeybi et al. 2019, Megatron-LM (v1)",
    "torchtitan benchmarks (PyTorch team, Dec 2024)",
)


def _keep_sources(path: Path, sources: tuple[str, ...]) -> None:
    """Keep only the rows of ``sources`` in the published measurements CSV ``path``.

    A new framework adds offset parameters, so the calibration it loads has another id than the
    one whose pilot errors data/calibration.yaml stores, and ``calibrate --measurements`` measures
    them again on the published scaling series: one base fit per source. The recipe test checks
    that this path runs and what the refit moves, not the shipped intervals, so two small sources
    with scaling series (30 rows, 6 series) stand for the whole published table.
    """
    with path.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    kept = [rows[0], *(row for row in rows[1:] if row and row[0] in sources)]
    assert len(kept) > len(sources) + 1, f"{sources} not in {path}"
    with path.open("w", newline="", encoding="utf-8") as file:
        csv.writer(file, lineterminator="\n").writerows(kept)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped data folder with the recipes' GPU, model and framework, and the
    published measurements of :data:`PUBLISHED_SOURCES` only (:func:`_keep_sources`)."""
    root = tmp_path_factory.mktemp("recipes") / "data"
    shutil.copytree(data_dir(), root)
    _edit(root / "hardware.yaml", _add_gpu)
    _edit(root / "models.yaml", _add_model)
    _edit(root / "frameworks.yaml", _add_framework)
    _keep_sources(root / "published" / "measurements.csv", PUBLISHED_SOURCES)
    return root


def _run(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python *args`` with TRAINSCALE_DATA set to ``folder`` and this checkout's package."""
    source = str(Path(trainscale.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "TRAINSCALE_DATA": str(folder),
        "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=folder.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _trainscale(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``trainscale ARGS`` with TRAINSCALE_DATA set to ``folder``, run in this process
    (:func:`tests.conftest.run_cli`): a command reads the data folder when it runs, which a
    fresh process checks too (test_the_new_framework_has_its_offsets_with_no_code_edit)."""
    return run_cli(*args, cwd=folder.parent, env={"TRAINSCALE_DATA": str(folder)})


def _row(**changes: object) -> dict[str, object]:
    base = {
        "model": MODEL, "gpu": GPU, "num_gpus": 16, "seq_len": 4096, "global_batch": 256,
        "micro_batch": 2, "tp": 1, "pp": 1, "sharding": "fsdp", "recompute": "none",
        "precision": "bf16", "framework": FRAMEWORK,
    }  # fmt: skip
    return base | changes


@pytest.fixture(scope="module")
def predictions(folder: Path) -> pd.DataFrame:
    """``trainscale predict`` on the new GPU and H100, the new framework and pytorch."""
    rows = [
        _row(gpu=gpu, num_gpus=n, recompute=r, framework=fw)
        for gpu in ("h100-sxm-80gb", GPU)
        for n in (8, 16, 32)
        for r in ("none", "full")
        for fw in (FRAMEWORK, "pytorch")
    ]
    configs = folder.parent / "configs.csv"
    pd.DataFrame(rows).to_csv(configs, index=False)
    out = folder.parent / "predictions.parquet"
    done = _trainscale(folder, "predict", str(configs), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return pd.read_parquet(out)


def test_the_new_framework_has_its_offsets_with_no_code_edit(folder: Path) -> None:
    script = (
        "import json; from trainscale.sim.catalogue import load_catalogue;"
        "from trainscale.sim.calibration import load_calibration;"
        "from trainscale.sim.parameters import parameters;"
        "FRAMEWORKS = load_catalogue().framework_keys; PARAMETERS = parameters(FRAMEWORKS);"
        "c = load_calibration();"
        "print(json.dumps({'frameworks': FRAMEWORKS,"
        f" 'specs': {{p.name: p.default for p in PARAMETERS if p.name.endswith('_{FRAMEWORK}')}},"
        f" 'offsets': dict(c.framework_offsets['{FRAMEWORK}']),"
        " 'pytorch': dict(c.framework_offsets['pytorch'])}))"
    )
    done = _run(folder, "-c", script)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["frameworks"] == [*FRAMEWORKS, FRAMEWORK]
    assert seen["specs"] == {f"{base}_offset_{FRAMEWORK}": 0.0 for base in BASES}
    # the shipped calibration file has no mystack offsets: they stand at their prior
    assert seen["offsets"] == dict.fromkeys(BASES, 0.0)
    shipped = yaml.safe_load((data_dir() / "calibration.yaml").read_text())["parameters"]
    assert seen["pytorch"] == {b: shipped[f"{b}_offset_pytorch"]["value"] for b in BASES}


def test_the_new_gpu_model_and_framework_predict(predictions: pd.DataFrame) -> None:
    assert len(predictions) == 24
    assert set(predictions["gpu"]) == {"h100-sxm-80gb", GPU}
    assert set(predictions["model"]) == {MODEL}
    assert set(predictions["framework"]) == {FRAMEWORK, "pytorch"}
    assert (predictions["tokens_per_s_per_gpu"] > 0).all()
    assert (predictions.loc[predictions["gpu"] == GPU, "system"] == SYSTEM).all()
    keys = ["num_gpus", "recompute", "framework"]
    speed = predictions.pivot_table("tokens_per_s_per_gpu", keys, "gpu")
    assert (speed[GPU] > 1.05 * speed["h100-sxm-80gb"]).all()  # 1.2x the BF16 peak
    # a copy of pytorch's profile: the same behaviours, and the same speed but for pytorch's
    # fitted offsets (within 2 %)
    by_framework = predictions.set_index(["gpu", "num_gpus", "recompute", "framework"])
    mine = by_framework.xs(FRAMEWORK, level="framework")
    theirs = by_framework.xs("pytorch", level="framework")
    for behaviour in ("overlap_grad_reduce", "fused_kernels", "attention_kernel", "fp8_recipe"):
        assert (mine[behaviour] == theirs[behaviour]).all()
    ratio = mine["tokens_per_s_per_gpu"] / theirs["tokens_per_s_per_gpu"]
    assert ratio.between(0.98, 1.02).all() and not (ratio == 1.0).all()


def test_the_new_frameworks_behaviour_refuses_a_plan(folder: Path) -> None:
    """The changed ``pipeline_shardings`` refuses FSDP with pp > 1 for mystack, not pytorch."""
    args = ["--model", MODEL, "--gpu", GPU, "--num-gpus", "16", "--pp", "2", "--sharding", "fsdp"]
    refused = _trainscale(folder, "predict", *args, "--framework", FRAMEWORK)
    assert refused.returncode == 2
    assert f"the {FRAMEWORK} profile runs pipeline parallelism (pp > 1) only with ddp, zero1" in (
        refused.stderr + refused.stdout
    )
    assert _trainscale(folder, "predict", *args, "--framework", "pytorch").returncode == 0


def test_a_figure_shows_the_new_gpu(
    folder: Path, predictions: pd.DataFrame, tmp_path: Path
) -> None:
    from trainscale.figures import render_figure
    from trainscale.sim.catalogue import load_catalogue_files

    sim = tmp_path / "sim.parquet"
    predictions[predictions["framework"] == FRAMEWORK].to_parquet(sim)
    catalogues = load_catalogue_files(
        {"hardware": folder / "hardware.yaml", "models": folder / "models.yaml"}
    )
    paths = render_figure(
        "hardware_generations", tmp_path / "figure", {"sim": str(sim)}, catalogues
    )
    png = next(p for p in paths if p.suffix == ".png")
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 10_000
    svg = next(p for p in paths if p.suffix == ".svg").read_text()
    assert GPU_LABEL in svg and "H100 80GB" in svg and MODEL_LABEL in svg


def test_calibrate_fits_the_new_frameworks_offset(folder: Path, predictions: pd.DataFrame) -> None:
    """Measured rows of mystack at 0.8x the prediction: the refit moves its GEMM offset (and no
    other framework's), and the refitted calibration predicts them within 5 %."""
    measured = predictions[(predictions["framework"] == FRAMEWORK) & (predictions["gpu"] == GPU)]
    columns = [*_row(), "measured_tokens_per_s_per_gpu"]
    table = measured.assign(
        measured_tokens_per_s_per_gpu=MEASURED_SHARE * measured["tokens_per_s_per_gpu"]
    )[columns]
    runs = folder.parent / "measured.csv"
    table.to_csv(runs, index=False)
    calibration = folder.parent / "my-calibration.yaml"
    done = _trainscale(folder, "calibrate", "--measurements", str(runs), "-o", str(calibration))
    assert done.returncode == 0, done.stderr
    assert "has no stored pilot errors" in done.stderr  # measured on the published series
    fitted = yaml.safe_load(calibration.read_text())["parameters"]
    shipped = yaml.safe_load((data_dir() / "calibration.yaml").read_text())["parameters"]
    assert fitted[f"gemm_efficiency_offset_{FRAMEWORK}"]["value"] < -0.05
    for base in BASES:
        for framework in FRAMEWORKS:
            name = f"{base}_offset_{framework}"
            assert fitted[name]["value"] == shipped[name]["value"], name
    out = folder.parent / "refitted.parquet"
    again = _trainscale(
        folder, "predict", str(runs), "-o", str(out), "--calibration", str(calibration)
    )
    assert again.returncode == 0, again.stderr
    error = (
        pd.read_parquet(out)["tokens_per_s_per_gpu"].to_numpy()
        / table["measured_tokens_per_s_per_gpu"].to_numpy()
    )
    assert abs(error - 1.0).max() < 0.05
