"""Small simulated, published and measured inputs for the figure and table tests.

Every frame comes from the real simulator on a handful of configurations (micro-batch 1, so no
``auto`` resolution is needed) or is fabricated with the columns the workflow writes; figures
render with Agg, rcParams changes stay inside each test and every figure is closed.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import matplotlib as mpl

mpl.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from tests.conftest import run_process, with_source
from trainscale import predict
from trainscale.io.parquet import conform
from trainscale.paper.values import PAPER_MICRO_BATCH
from trainscale.schema import DATASET_COLUMNS

BASE = {
    "seq_len": 4096,
    "global_batch": 2048,
    "micro_batch": 1,
    "gpu": "h100-sxm-80gb",
    "tp": 1,
    "pp": 1,
    "sharding": "fsdp",
    "recompute": "none",
    "precision": "bf16",
}


def simulate(**axes: list) -> pd.DataFrame:
    """Predict the cross product of ``axes`` over :data:`BASE`, at the paper setup's micro-batch
    (``min(2, local batch)``)."""
    keys = list(axes)
    rows = [
        {**BASE, **dict(zip(keys, values, strict=True))}
        for values in itertools.product(*axes.values())
    ]
    frame = pd.DataFrame(rows)
    frame = frame[frame["tp"] * frame["pp"] <= frame["num_gpus"]].reset_index(drop=True)
    local = frame["global_batch"] // (frame["num_gpus"] // (frame["tp"] * frame["pp"]))
    frame["micro_batch"] = local.clip(upper=PAPER_MICRO_BATCH)  # the paper setup's rule
    return predict(frame)


@pytest.fixture(autouse=True)
def _isolated_matplotlib():
    with mpl.rc_context():
        yield
    plt.close("all")


@pytest.fixture(scope="session")
def scaleout_sim() -> pd.DataFrame:
    """Llama-2 7B and 70B, FSDP, H100, no and full recompute, 8 to 2,048 GPUs."""
    return scaleout()


def scaleout() -> pd.DataFrame:
    """The frame of :func:`scaleout_sim`."""
    return simulate(
        model=["llama2-7b", "llama2-70b"],
        recompute=["none", "full"],
        num_gpus=[8, 32, 128, 512, 2048],
    )


# A study's scaling figure (reports/studies/<study>/scaling), drawn in a fresh process: the
# fsdp_scaleout study's layout (a row of five metric panels per recompute mode, the legend row),
# from the small scale-out. Matplotlib's constrained layout solves with kiwisolver, which orders
# each constraint's terms by the memory address of its variables, so that where this process's
# allocator happens to put them decides the last bits of every Axes position. ``shuffle`` hands
# the layout its variables in a shuffled address order: another process's heap, on demand.
RENDER_SCALING = textwrap.dedent(
    """
    import random
    import sys

    import kiwisolver
    import matplotlib
    import pandas as pd

    matplotlib.use("Agg")

    from trainscale.figures._common import save_styled
    from trainscale.figures.study_scaling import plot_scaling
    from trainscale.report import apply_style
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.study.report import DEFAULT_METRICS, ReportSpec, select_rows

    parquet, stem, shuffle = sys.argv[1], sys.argv[2], int(sys.argv[3])
    apply_style()
    catalogue = load_catalogue()
    spec = ReportSpec(
        x="num_gpus",
        series=("model",),
        facet="recompute",
        best_of=(),
        metrics=DEFAULT_METRICS,
        levels={"model": ("llama2-7b", "llama2-70b"), "recompute": ("none", "full")},
    )
    rows = select_rows(pd.read_parquet(parquet), spec)
    if shuffle:
        pool = [kiwisolver.Variable() for _ in range(20_000)]
        random.Random(shuffle).shuffle(pool)

        def variable(name=""):
            chosen = pool.pop()
            chosen.setName(name)
            return chosen

        kiwisolver.Variable = variable
    save_styled(
        lambda: plot_scaling(
            rows,
            spec,
            note="The study's setup.",
            hardware=catalogue.hardware,
            models=catalogue.models,
            title="Study fsdp_scaleout: scaling",
        ),
        stem,
    )
    """
)


def _scaling_renders(folder: Path) -> list[tuple[subprocess.CompletedProcess[str], Path]]:
    """The work of :func:`scaling_renders`."""
    parquet = folder / "sim.parquet"
    scaleout().to_parquet(parquet)
    renders = []
    for name, seed, shuffle in (("a", "0", "0"), ("b", "1", "1")):
        command = [sys.executable, "-c", RENDER_SCALING, str(parquet), str(folder / name), shuffle]
        env = with_source({**os.environ, "PYTHONHASHSEED": seed})
        renders.append((run_process(command, cwd=folder, env=env, timeout=300), folder / name))
    return renders


@pytest.fixture(scope="session")
def scaling_renders(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[subprocess.CompletedProcess[str], Path]]:
    """The scale-out's study scaling figure (:func:`scaleout`) rendered in two fresh processes,
    one after the other, with hash seeds 0 and 1, the second given its layout variables in a
    shuffled address order (:data:`RENDER_SCALING`): ``[(finished process, stem), …]``, the
    stem's ``.pdf``, ``.png`` and ``.svg`` written. Once per session."""
    return _scaling_renders(tmp_path_factory.mktemp("scaling_renders"))


@pytest.fixture(scope="session")
def model_parallel_sim() -> pd.DataFrame:
    return simulate(
        model=["llama2-7b", "llama2-70b"],
        num_gpus=[512, 2048],
        tp=[1, 2, 4],
        pp=[1, 2, 4],
        recompute=["none", "full"],
    )


@pytest.fixture(scope="session")
def hardware_sim() -> pd.DataFrame:
    return simulate(
        model=["llama2-7b"],
        gpu=["a100-sxm-80gb", "h100-sxm-80gb", "b200"],
        recompute=["none", "full"],
        num_gpus=[8, 128, 2048],
    )


@pytest.fixture(scope="session")
def context_sim() -> pd.DataFrame:
    frames = [
        simulate(
            model=["llama2-7b"],
            seq_len=[seq],
            global_batch=[8388608 // seq],
            num_gpus=[128],
            recompute=["none", "full"],
        )
        for seq in (1024, 4096, 16384)
    ]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="session")
def compute_sim() -> pd.DataFrame:
    return simulate(model=["llama2-7b"], num_gpus=[8, 64, 512], tp=[1, 2], pp=[1, 2])


@pytest.fixture(scope="session")
def batch_sim() -> pd.DataFrame:
    return simulate(
        model=["llama2-7b"], seq_len=[2048, 4096], global_batch=[2048, 4096], num_gpus=[128, 2048]
    )


@pytest.fixture(scope="session")
def moe_sim() -> pd.DataFrame:
    """Llama-3 70B (tp 8, pp 2) against Qwen3 30B-A3B (ep 8) with Megatron-Core, 64 and 256
    GPUs, full recomputation."""
    plans = (("llama3-70b", 8, 2, 1), ("qwen3-30b-a3b", 1, 1, 8))
    rows = [
        {**BASE, "model": model, "tp": tp, "pp": pp, "ep": ep, "num_gpus": n,
         "framework": "megatron", "sharding": "zero1", "recompute": "full"}
        for model, tp, pp, ep in plans
        for n in (64, 256)
    ]  # fmt: skip
    return predict(pd.DataFrame(rows))


@pytest.fixture(scope="session")
def best_sim() -> pd.DataFrame:
    return simulate(
        model=["llama2-7b", "llama2-70b"],
        num_gpus=[64, 2048],
        tp=[1, 2],
        pp=[1, 2],
        sharding=["fsdp", "zero1"],
        recompute=["none", "full"],
    )


@pytest.fixture(scope="session")
def validation_rows() -> pd.DataFrame:
    """Rows shaped like results/validation.parquet: source A has MAPE 10 %, B 50 %, C only a
    rejected throughput row, P only a rejected power row, plus two nccl-tests rows (one of
    8 MiB, one of 1 GiB)."""
    rows = [
        (2, "A", "predicted", "throughput", 100.0, 110.0, "tokens_per_s_per_GPU", None, None),
        (3, "A", "predicted", "throughput", 1000.0, 900.0, "tokens_per_s_per_GPU", None, None),
        (4, "B", "predicted", "throughput", 50.0, 75.0, "TFLOPs_per_GPU", None, None),
        (5, "B", "rejected", None, None, None, "MFU_pct", "GPU count not stated (8 and 128)", None),
        (6, "C", "rejected", None, None, None, "TFLOPs", "GPU count not stated (empty)", None),
        (7, "P", "rejected", None, None, None, "node_power_kW", "node-level power", None),
        (8, "N", "predicted", "collective", 400.0, 380.0, "busbw_GBps", None, 2.0**30),
        (9, "N", "predicted", "collective", 100.0, 150.0, "busbw_GBps", None, 8 * 2.0**20),
    ]  # fmt: skip
    columns = ["csv_row", "citation", "status", "kind", "observed", "predicted"]
    frame = pd.DataFrame(rows, columns=[*columns, "published_metric", "reason", "size_bytes"])
    frame["ape_pct"] = (100 * (frame["predicted"] - frame["observed"]) / frame["observed"]).abs()
    frame["calibration_id"] = "cal123"
    frame["simulator_version"] = "0.1.0"
    return frame


@pytest.fixture(scope="session")
def holdout_rows() -> pd.DataFrame:
    """Rows shaped like results/holdout.parquet for the throughput rows of
    :func:`validation_rows`: held out, A has MAPE 20 % (frameworks megatron and pytorch), B 60 %
    (deepspeed)."""
    frame = pd.DataFrame(
        {
            "csv_row": [2, 3, 4],
            "citation": ["A", "A", "B"],
            "framework": ["megatron", "pytorch", "deepspeed"],
            "model_name": ["m1", "m2", "m3"],
            "num_gpus": [8, 64, 512],
            "gpu": ["h100-sxm-80gb"] * 3,
            "observed_tokens_per_s_per_gpu": [100.0, 1000.0, 50.0],
            "predicted_tokens_per_s_per_gpu": [120.0, 800.0, 80.0],
        }
    )
    observed = frame["observed_tokens_per_s_per_gpu"]
    frame["error_pct"] = 100 * (frame["predicted_tokens_per_s_per_gpu"] - observed) / observed
    frame["ape_pct"] = frame["error_pct"].abs()
    frame["calibration_id"] = "cal123"
    frame["simulator_version"] = "0.1.0"
    return frame


@pytest.fixture(scope="session")
def collective_curves_table() -> pd.DataFrame:
    """results/collectives.parquet for H100 (DGX H100), with the per-layer messages of Llama-2
    7B and 70B, from the real collective model."""
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.collective_curves import collective_curves
    from trainscale.sim.model.shape import load_models

    models = load_models()
    return collective_curves(
        load_calibration(),
        catalogue=load_catalogue(),
        gpus=["h100-sxm-80gb"],
        models={key: models[key] for key in ("llama2-7b", "llama2-70b")},
    )


@pytest.fixture(scope="session")
def published_collectives() -> SimpleNamespace:
    """Published nccl-tests rows as trainscale.published.measurements.PublishedData holds them
    (its ``collectives``; nothing else is read)."""
    return SimpleNamespace(
        collectives=pd.DataFrame(
            {
                "csv_row": [11, 12, 13],
                "citation": ["nccl source", "nccl source", "p2p source"],
                "collective": ["allreduce", "allreduce", "sendrecv"],
                "size_bytes": [2.0**30, 2.0**33, 2.0**30],
                "num_gpus": [16, 16, 8],
                "gpu": ["h100-sxm-80gb"] * 3,
                "observed_busbw_gbytes_per_s": [400.0, 450.0, 190.0],
            }
        )
    )


@pytest.fixture(scope="session")
def collective_validation() -> pd.DataFrame:
    """The rows of results/validation.parquet that predict :func:`published_collectives`."""
    return pd.DataFrame(
        {
            "csv_row": [2, 11, 12, 13],
            "status": ["predicted"] * 4,
            "kind": ["throughput", "collective", "collective", "collective"],
            "predicted": [1000.0, 420.0, 470.0, 230.0],
        }
    )


@pytest.fixture(scope="session")
def measured_dataset(scaleout_sim) -> pd.DataFrame:
    """A dataset with simulated rows, one measured H100 run and one measured CPU run."""
    common = {
        "source": "measured",
        "study": "runs",
        "layers": 2,
        "hidden": 256,
        "heads": 4,
        "kv_heads": 4,
        "ffn": 1024,
        "vocab": 1000,
        "mlp": "swiglu",
        "seq_len": 256,
        "global_batch": 8,
        "micro_batch": 1,
        "tp": 1,
        "pp": 1,
        "sharding": "ddp",
        "recompute": "none",
        "precision": "bf16",
    }
    measured = pd.DataFrame(
        [
            {
                **common,
                "run_id": "gpu_run",
                "config_id": "tiny_h100_n8",
                "gpu": "h100-sxm-80gb",
                "num_gpus": 8,
                "step_time_s": 0.05,
                "tokens_per_s_per_gpu": 5120.0,
            },
            {
                **common,
                "run_id": "cpu_run",
                "config_id": "tiny_cpu_n1",
                "gpu": "cpu",
                "num_gpus": 1,
                "step_time_s": 2.0,
                "tokens_per_s_per_gpu": 1024.0,
            },
        ]
    )
    sim = scaleout_sim.assign(study="fsdp_scaleout")
    return conform(pd.concat([sim, measured], ignore_index=True), DATASET_COLUMNS)


@pytest.fixture(scope="session")
def sim_vs_measured_table(measured_dataset) -> pd.DataFrame:
    """results/sim_vs_measured.parquet of :func:`measured_dataset`: the H100 run predicted, the
    CPU run with its reason."""
    from trainscale.ingest.accuracy import predict_measured
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue

    measured = measured_dataset[measured_dataset["source"] == "measured"]
    return predict_measured(
        measured.reset_index(drop=True), load_calibration(), catalogue=load_catalogue()
    )


@pytest.fixture(scope="session")
def energy_bill_table() -> pd.DataFrame:
    """results/paper/energy.parquet as rule paper_energy writes it, from the shipped data."""
    from trainscale.paper.energy import FIGURE_USD_PER_GPU_HOUR, energy_table
    from trainscale.paths import data_dir
    from trainscale.published.power_rows import load_power_rows
    from trainscale.published.sources import load_sources
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.energy import load_power_terms

    catalogue = load_catalogue()
    published = data_dir() / "published"
    rows = load_power_rows(
        published / "power-measurements.csv",
        catalogue,
        load_sources(published / "sources.yaml", frameworks=catalogue.framework_keys),
    )
    return energy_table(
        load_calibration(), load_power_terms(), catalogue=catalogue, power_rows=rows,
        usd_per_gpu_hour=FIGURE_USD_PER_GPU_HOUR,
    )  # fmt: skip
