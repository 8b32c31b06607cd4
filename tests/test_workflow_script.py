"""trainscale.workflow: what every workflow script does around its one call."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainscale.errors import TrainscaleError
from trainscale.workflow import rule_script

REPO = Path(__file__).resolve().parents[1]


class _Inputs(dict):
    """Snakemake's named inputs: by key and by attribute."""

    __getattr__ = dict.__getitem__


def _snakemake(log: Path, **inputs: object) -> SimpleNamespace:
    return SimpleNamespace(input=_Inputs(inputs), log=[str(log)])


@pytest.fixture
def restore_stderr():
    saved = sys.stderr
    yield
    if sys.stderr is not saved:
        sys.stderr.close()
    sys.stderr = saved


def test_an_error_is_one_line_in_the_log_and_exit_status_1(tmp_path: Path, restore_stderr) -> None:
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as exited, rule_script(_snakemake(log)):
        print("working", file=sys.stderr)
        raise TrainscaleError("bad.csv: row 3, column 'tp': 0 is not allowed (1 to 1024)")
    assert exited.value.code == 1
    assert log.read_text().splitlines() == [
        "working",
        "error: bad.csv: row 3, column 'tp': 0 is not allowed (1 to 1024)",
    ]


def test_the_note_and_the_console_echo(tmp_path: Path, restore_stderr, capsys) -> None:
    log = tmp_path / "job.log"
    with (
        pytest.raises(SystemExit),
        rule_script(_snakemake(log), error_note=" (config ingest.strict)", echo_errors=True),
    ):
        raise TrainscaleError("run.yaml: warned")
    assert log.read_text() == "error (config ingest.strict): run.yaml: warned\n"
    assert "error (config ingest.strict): run.yaml: warned" in capsys.readouterr().err


def test_other_errors_are_not_hidden(tmp_path: Path, restore_stderr) -> None:
    with pytest.raises(ZeroDivisionError), rule_script(_snakemake(tmp_path / "job.log")):
        _ = 1 / 0


def test_catalogue_and_calibration_come_from_the_declared_paths(
    tmp_path: Path, restore_stderr
) -> None:
    data = tmp_path / "data"
    shutil.copytree(REPO / "data", data, ignore=shutil.ignore_patterns("runs", "published"))
    text = (data / "hardware.yaml").read_text()
    (data / "hardware.yaml").write_text(text.replace("label: V100 32GB", "label: Volta 32"))
    names = ("hardware", "models", "frameworks", "nccl", "calibration")
    snakemake = _snakemake(tmp_path / "job.log", **{n: str(data / f"{n}.yaml") for n in names})
    with rule_script(snakemake) as rule:
        catalogue = rule.catalogue()
        calibration = rule.calibration()
        only = rule.catalogue_files(["hardware"])
        rule.wrote(["out.parquet"])
    assert catalogue.hardware.gpus["v100-sxm-32gb"].label == "Volta 32"
    assert list(only) == ["hardware"] and only["hardware"] is catalogue.hardware
    assert calibration.calibration_id
    assert (tmp_path / "job.log").read_text() == "wrote out.parquet\n"
