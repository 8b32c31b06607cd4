"""A killed or failed dataset write leaves nothing behind (user trial item 34)."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale import dataset
from trainscale.dataset import read_dataset, remove_stale_temporaries, write_dataset


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "source": ["sim", "measured"],
            "study": ["s", "runs"],
            "config_id": ["a", "b"],
            "num_gpus": [8, 16],
            "warnings": ["", "x.log:3: 1 exact duplicate step line(s) dropped"],
        }
    )


def test_stale_temporary_folders_of_this_dataset_are_removed(tmp_path):
    stale = tmp_path / ".dataset.0123456789ab.tmp"
    (stale / "source=sim").mkdir(parents=True)
    (stale / "source=sim" / "part-0.parquet").write_bytes(b"partial")
    other = [
        tmp_path / ".other.0123456789ab.tmp",  # another output's
        tmp_path / ".dataset.keep.tmp",  # not the writer's pattern
        tmp_path / "dataset.0123456789ab.tmp",  # not hidden
    ]
    for folder in other:
        folder.mkdir()
    write_dataset(_frame(), tmp_path / "dataset")
    assert not stale.exists()
    assert all(folder.exists() for folder in other)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".dataset")) == [
        ".dataset.keep.tmp"
    ]
    back = read_dataset(tmp_path / "dataset")
    assert sorted(back["warnings"].tolist()) == sorted(_frame()["warnings"].tolist())
    assert remove_stale_temporaries(tmp_path / "dataset") == []


def test_a_failed_write_leaves_no_partial_output(tmp_path, monkeypatch):
    write_dataset(_frame(), tmp_path / "dataset")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    calls = []
    original = dataset._write_partition

    def fail_second(load, source, study, schema, path):
        calls.append(path)
        rows = original(load, source, study, schema, path)  # the file is written, then
        if len(calls) == 2:
            raise OSError(28, "No space left on device")  # the disk fills
        return rows

    monkeypatch.setattr(dataset, "_write_partition", fail_second)
    with pytest.raises(OSError, match="No space left"):
        write_dataset(_frame(), tmp_path / "dataset")
    assert len(calls) == 2
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before  # the old dataset intact, no temporary folder
