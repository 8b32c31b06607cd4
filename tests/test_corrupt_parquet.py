"""A corrupt or truncated intermediate Parquet file is an error naming it and saying to delete it,
in the readers (trainscale.io.parquet, trainscale.dataset) and in the workflow's scripts that
read one (no traceback, exit status 1, nothing written)."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import trainscale
from trainscale.errors import InputFileError
from trainscale.io.parquet import write_parquet
from trainscale.schema import RESULT_COLUMNS

SCRIPTS = Path(trainscale.__file__).resolve().parents[2] / "workflow" / "scripts"


def _damaged(tmp_path: Path, how: str) -> Path:
    """A results table written as the workflow writes it, then damaged ``how``."""
    path = tmp_path / "0.parquet"
    frame = pd.DataFrame({"config_id": ["a", "b"], "num_gpus": [8, 16], "step_time_s": [1.0, 2.0]})
    write_parquet(frame, path, RESULT_COLUMNS)
    data = path.read_bytes()
    if how == "truncated":  # a job killed while the file was copied elsewhere
        path.write_bytes(data[: len(data) // 2])
    elif how == "zeroed":  # a disk that lost the middle of the file
        middle = len(data) // 2
        path.write_bytes(data[:8] + bytes(middle - 8) + data[middle:])
    elif how == "text":
        path.write_text("config_id,num_gpus\na,8\n")
    else:
        path.write_bytes(b"")
    return path


DAMAGE = ["truncated", "zeroed", "text", "empty"]


def _names_and_says_delete(message: str, path: Path) -> None:
    assert message.startswith(f"{path}: "), message
    assert "delete it" in message


@pytest.mark.parametrize("how", DAMAGE)
def test_read_parquet_names_a_corrupt_file(tmp_path: Path, how: str) -> None:
    from trainscale.io.parquet import read_parquet

    path = _damaged(tmp_path, how)
    with pytest.raises(InputFileError) as caught:
        read_parquet(path, RESULT_COLUMNS)
    _names_and_says_delete(str(caught.value), path)


@pytest.mark.parametrize("how", DAMAGE)
def test_a_studys_results_that_are_corrupt_are_named(tmp_path: Path, how: str) -> None:
    from trainscale.dataset import read_study_results

    path = _damaged(tmp_path, how)
    with pytest.raises(InputFileError) as caught:
        read_study_results(path, "smoke")
    _names_and_says_delete(str(caught.value), path)


def test_a_corrupt_dataset_part_names_the_folder_and_the_part(tmp_path: Path) -> None:
    from trainscale.dataset import read_dataset

    part = tmp_path / "dataset" / "source=sim" / "study=smoke"
    part.mkdir(parents=True)
    damaged = _damaged(part, "truncated")
    with pytest.raises(InputFileError) as caught:
        read_dataset(tmp_path / "dataset")
    message = str(caught.value)
    _names_and_says_delete(message, tmp_path / "dataset")
    assert str(damaged) in message or damaged.name in message


def test_a_missing_file_is_still_file_not_found(tmp_path: Path) -> None:
    from trainscale.io.parquet import read_parquet

    with pytest.raises(FileNotFoundError):
        read_parquet(tmp_path / "absent.parquet", RESULT_COLUMNS)


def _run_script(name: str, tmp_path: Path, **fields: object) -> str:
    """Run a workflow script as Snakemake would; return its log. It must exit with status 1."""
    log = tmp_path / f"{name}.log"
    snakemake = SimpleNamespace(log=[str(log)], **fields)
    with pytest.raises(SystemExit) as caught:
        runpy.run_path(str(SCRIPTS / f"{name}.py"), init_globals={"snakemake": snakemake})
    assert caught.value.code == 1
    return log.read_text()


@pytest.mark.parametrize("how", ["truncated", "text"])
def test_simulate_study_names_a_corrupt_chunk_and_writes_nothing(tmp_path: Path, how: str) -> None:
    chunk = _damaged(tmp_path, how)
    out = tmp_path / "out" / "smoke.parquet"
    out.parent.mkdir()
    log = _run_script(
        "simulate_study", tmp_path,
        input=SimpleNamespace(chunks=[str(chunk)]),
        output=SimpleNamespace(results=str(out)),
        wildcards=SimpleNamespace(study="smoke"),
    )  # fmt: skip
    assert f"error: {chunk}: not a readable Parquet file" in log
    assert "delete it" in log and "Traceback" not in log
    assert list(out.parent.iterdir()) == []  # no partial output


def test_simulate_chunk_names_a_corrupt_configuration_file(tmp_path: Path) -> None:
    configurations = _damaged(tmp_path, "truncated")
    out = tmp_path / "chunk.parquet"
    log = _run_script(
        "simulate_chunk", tmp_path,
        input=SimpleNamespace(configurations=str(configurations)),
        output=SimpleNamespace(chunk=str(out)),
        params=SimpleNamespace(filters=None),
        wildcards=SimpleNamespace(chunk="0"),
    )  # fmt: skip
    assert f"error: {configurations}: not a readable Parquet file" in log
    assert not out.exists()
