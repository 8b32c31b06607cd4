"""Three studies of a user's own, run together by the fixture ``user_studies_run``
(tests/workflow/conftest.py); each test file reads the outputs of its own study.

- :data:`NEW`: a study no code knows, which gets its own scaling figure and fits table
  (tests/workflow/test_workflow_studies.py);
- :data:`SWITCH`: a study whose winning plan switches, named in its points table
  (tests/workflow/test_workflow_points.py);
- :data:`PILOT`: the smoke study calibrated on its own pilots
  (tests/workflow/test_workflow_study_calibration.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

NEW = "llama2_13b_a100"
#: A study written by a user: nothing in the code names it, its model, GPU or batch.
NEW_STUDY = {
    "description": "Llama-2 13B with PyTorch FSDP on A100 80GB, 16 to 1,024 GPUs, 1,024 sequences.",
    "fixed": {
        "model": "llama2-13b", "seq_len": 4096, "global_batch": 1024, "micro_batch": 1,
        "gpu": "a100-sxm-80gb", "tp": 1, "pp": 1, "sharding": "fsdp", "recompute": "full",
        "precision": "bf16",
    },
    "sweep": {"num_gpus": [16, 32, 64, 128, 256, 512, 1024]},
}  # fmt: skip

SWITCH = "llama2_70b_tp_switch"
#: Llama-2 70B with FSDP on H100: tp 2 wins up to 1,024 GPUs, tp 4 with micro-batch 2 at 2,048
#: (where the local batch is one sequence per data-parallel rank at tp 2).
SWITCH_STUDY = {
    "description": "Llama-2 70B, FSDP on H100, tp 2 or 4, micro-batch 1 or 2, 256 to 2,048 GPUs.",
    "fixed": {
        "model": "llama2-70b", "seq_len": 4096, "global_batch": 2048, "gpu": "h100-sxm-80gb",
        "pp": 1, "sharding": "fsdp", "recompute": "none", "precision": "bf16",
    },
    "sweep": {"num_gpus": [256, 512, 1024, 2048], "tp": [2, 4], "micro_batch": [1, 2]},
    "report": {"best_of": ["tp", "micro_batch"]},
}  # fmt: skip

PILOT = "pilot"
#: The pilots: data/published/measurements.csv rows 77-84 (CSV data rows, 1-based as
#: trainscale's published tables count them in ``csv_row``), llm-foundry on H100 at 8-64 GPUs,
#: citation "MosaicML llm-foundry ..."; measured = the published tokens/s per GPU.
PILOT_CSV_ROWS = list(range(77, 85))
#: The configuration columns a pilot table carries.
KEEP = [
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp", "seq_len", "global_batch",
    "micro_batch", "gpu", "num_gpus", "gpus_per_node", "tp", "pp", "sharding", "recompute",
    "precision", "framework", "attention_kernel",
]  # fmt: skip
#: What the pilot study is calibrated on: a table of the pilots and a run folder.
PILOT_MEASUREMENTS = ["pilots/foundry.csv", "data/runs/megatron_golden_345m"]

NAMES = (NEW, SWITCH, PILOT)
#: What the run builds.
TARGETS = (
    f"reports/studies/{NEW}/scaling.png", f"reports/studies/{NEW}/fits.md",
    f"reports/studies/{SWITCH}/points.md",
    f"results/sim/{PILOT}.parquet", f"reports/studies/{PILOT}/scaling.svg",
)  # fmt: skip


def pilot_table(workdir: Path) -> pd.DataFrame:
    """The pilot rows of the copy's published measurements, measured = published."""
    from trainscale.published.measurements import load_published
    from trainscale.sim.catalogue import load_catalogue

    catalogue = load_catalogue()
    rows = load_published(
        workdir / "data" / "published" / "measurements.csv",
        hardware=catalogue.hardware, models=catalogue.models, frameworks=catalogue.framework_keys,
    ).throughput  # fmt: skip
    rows = rows[rows["csv_row"].isin(PILOT_CSV_ROWS)]
    assert len(rows) == len(PILOT_CSV_ROWS)
    assert rows["citation"].str.startswith("MosaicML").all()
    return rows[[*KEEP, "citation"]].assign(
        measured_tokens_per_s_per_gpu=rows["observed_tokens_per_s_per_gpu"]
    )


def pilot_study(workdir: Path, measurements: list[str]) -> None:
    """Write config/studies/pilot.yaml: the smoke study calibrated on ``measurements``."""
    studies = workdir / "config" / "studies"
    study = yaml.safe_load((studies / "smoke.yaml").read_text())
    study["description"] = "The smoke study, simulated with a calibration on its own pilots."
    study["calibration"] = {"measurements": measurements}
    (studies / f"{PILOT}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))


def write(workdir: Path) -> None:
    """Write the three studies (and the pilots' table) into the copy ``workdir``."""
    studies = workdir / "config" / "studies"
    (studies / f"{NEW}.yaml").write_text(yaml.safe_dump(NEW_STUDY, sort_keys=False))
    (studies / f"{SWITCH}.yaml").write_text(yaml.safe_dump(SWITCH_STUDY, sort_keys=False))
    (workdir / "pilots").mkdir()
    pilot_table(workdir).to_csv(workdir / "pilots" / "foundry.csv", index=False)
    pilot_study(workdir, PILOT_MEASUREMENTS)
