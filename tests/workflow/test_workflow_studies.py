"""Per-study outputs: a study no code knows gets its own scaling figure and fits table, with
notes from its own setup; an unknown output name stops the run at start-up."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.workflow._user_studies import NEW

pytestmark = pytest.mark.workflow

NAME = NEW


def _svg_text(path: Path) -> str:
    """The text drawn in an SVG (matplotlib writes each text line as a comment before its
    glyph paths), joined with single spaces."""
    lines = re.findall(r"<!-- (.*?) -->", path.read_text(), flags=re.DOTALL)
    return " ".join(" ".join(lines).split())


def test_a_new_study_gets_its_scaling_figure_and_fits(user_studies_run) -> None:
    """The study :data:`tests.workflow._user_studies.NEW_STUDY`, built in the shared run of the
    users' studies (fixture user_studies_run)."""
    workdir = user_studies_run.check()
    out = f"reports/studies/{NAME}"
    keep = os.environ.get("TRAINSCALE_KEEP_STUDY_PNG")  # to look at the figure
    if keep and (workdir / out / "scaling.png").exists():
        shutil.copy(workdir / out / "scaling.png", keep)

    for ext in ("pdf", "png", "svg"):
        assert (workdir / out / f"scaling.{ext}").stat().st_size > 0
    text = _svg_text(workdir / out / "scaling.svg")
    assert "A100 80GB" in text and "Llama-2 13B" in text
    assert "global batch 1,024 sequences" in text
    assert "Simulated" in text and "calibration" in text
    for other in ("H100", "2,048 sequences", "fernandez", "Llama-2 7B", "Llama-2 70B"):
        assert other not in text, f"{other!r} in the notes of {NAME}: {text[-600:]}"
    fits = pd.read_csv(workdir / out / "fits.csv")
    assert set(fits["source"]) == {"simulated"}
    slope = fits[(fits["metric"] == "tokens_per_s_per_gpu") & (fits["parameter"] == "slope")]
    assert len(slope) == 1 and slope["n"].item() == 7
    assert slope["ci_low"].item() <= slope["estimate"].item() <= slope["ci_high"].item()
    assert {"sigma", "kappa", "n_star"} <= set(fits.loc[fits["fit"] == "usl", "parameter"])
    knee = fits[fits["fit"] == "knee"]  # the knee: one row, or two where the series has one
    assert len(knee) in (1, 2) and knee["parameter"].iloc[0] == "knee_gpus"
    md_rows = (workdir / out / "fits.md").read_text().count("| Llama-2 13B, A100 80GB |")
    assert md_rows == 7 + len(knee)
    assert "2048.0" not in (workdir / out / "fits.md").read_text()


@pytest.mark.parametrize("section", ["figures", "tables"])
def test_unknown_output_name_stops_the_run_at_start_up(
    workflow_copy, run_snakemake, section: str
) -> None:
    workdir = workflow_copy()
    config_path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config[section] = ["scaling_fitz"]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    done = run_snakemake(workdir, "--dry-run")

    output = done.stdout + done.stderr
    assert done.returncode != 0
    kind = section[:-1]
    assert f"unknown {kind}(s) 'scaling_fitz' under '{section}'; known: " in output, output[-2000:]
    assert "MissingInputException" not in output
    known = "fsdp_scaleout" if section == "figures" else "scaling_fits"
    assert known in output.split("known: ", 1)[1]
    assert not (workdir / "results").exists()
