"""The published CSV refuses bad data before any fit (reliability trial 3: S15, tracebacks 5
and 6), and ``data/published/sources.yaml`` drives the per-source rules.

Each damaged copy of the shipped CSV must stop with an
:class:`~trainscale.errors.InputFileError` naming the file, the CSV line, the 0-based data row
and the column, never a pandas ``KeyError`` or a scipy "Residuals are not finite" in the fit.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml

from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.published.measurements import PublishedData
from trainscale.published.measurements import load_published as _load_published
from trainscale.published.sources import load_sources
from trainscale.sim.catalogue import load_catalogue

REAL = data_dir() / "published" / "measurements.csv"
SOURCES = data_dir() / "published" / "sources.yaml"
CATALOGUE = load_catalogue()
HEADER, *ROWS = list(csv.reader(REAL.open(newline="")))
COLUMN = {name: i for i, name in enumerate(HEADER)}


def load(path: Path | None = None, **kw: object) -> PublishedData:
    return _load_published(
        path,
        hardware=CATALOGUE.hardware,
        models=CATALOGUE.models,
        frameworks=CATALOGUE.framework_keys,
        **kw,
    )


def _write(tmp: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    path = tmp / "measurements.csv"
    path.write_text(out.getvalue())
    return path


def _index(predicate) -> int:
    """0-based data row of the first shipped row matching ``predicate(record)``."""
    for index, fields in enumerate(ROWS):
        if predicate(dict(zip(HEADER, fields, strict=True))):
            return index
    raise AssertionError("no such row")


FOUNDRY = _index(lambda r: "llm-foundry" in r["source"])
NARAYANAN = _index(lambda r: r["metric"] == "achieved_TFLOPs_per_GPU")
SHOEYBI = _index(lambda r: "Shoeybi" in r["source"] and r["metric"] == "TFLOPs_per_GPU")
TORCHTITAN_PP = _index(
    lambda r: "torchtitan benchmarks" in r["source"] and r["pp"] not in ("", "1", "1.0")
)


def _assert_names(error: InputFileError, path: Path, row: int, column: str | None) -> None:
    message = str(error)
    assert message.startswith(f"{path}:{row + 2}: "), message
    assert f"row {row}" in message
    if column is not None:
        assert f"column '{column}'" in message
    assert error.line == row + 2


def test_the_shipped_csv_has_no_duplicate_and_loads() -> None:
    published = load()
    bridge = published.moe[published.moe["data_file"] == "measurements.csv"]
    rows = len(published.throughput) + len(published.collectives) + len(published.rejects)
    assert rows + len(bridge) == len(ROWS)


def test_an_exact_duplicate_row_is_refused(tmp_path: Path) -> None:
    rows = [list(r) for r in ROWS]
    rows.insert(FOUNDRY + 5, list(ROWS[FOUNDRY]))
    path = _write(tmp_path, rows)
    with pytest.raises(
        InputFileError, match=rf"repeats row {FOUNDRY} \(line {FOUNDRY + 2}\)"
    ) as caught:
        load(path)
    _assert_names(caught.value, path, FOUNDRY + 5, None)


def test_a_duplicate_configuration_with_another_value_is_refused(tmp_path: Path) -> None:
    rows = [list(r) for r in ROWS]
    twin = list(ROWS[NARAYANAN])
    twin[COLUMN["value"]] = str(float(twin[COLUMN["value"]]) + 1)
    rows.append(twin)
    path = _write(tmp_path, rows)
    with pytest.raises(InputFileError, match="conflicts with") as caught:
        load(path)
    _assert_names(caught.value, path, len(ROWS), "value")
    assert f"row {NARAYANAN} (line {NARAYANAN + 2})" in str(caught.value)


def test_rows_that_differ_in_notes_are_different_measurements(tmp_path: Path) -> None:
    rows = [list(r) for r in ROWS]
    twin = list(ROWS[FOUNDRY])
    twin[COLUMN["notes"]] += "; rerun with another seed"
    twin[COLUMN["value"]] = str(float(twin[COLUMN["value"]]) + 1)
    rows.append(twin)
    published = load(_write(tmp_path, rows))
    assert len(published.throughput) == len(load().throughput) + 1


@pytest.mark.parametrize(
    ("row", "column", "value", "allowed"),
    [
        (FOUNDRY, "value", "0", "a positive finite number"),  # traceback 5: log(0) in the fit
        (FOUNDRY, "value", "0.0", "a positive finite number"),
        (FOUNDRY, "value", "~0", "a positive finite number"),
        (FOUNDRY, "value", "inf", "a plain number"),
        (FOUNDRY, "value", "nan", "a plain number"),
        (FOUNDRY, "num_gpus", "1000000000", "up to 1,048,576"),  # traceback 5: absurd count
        (FOUNDRY, "num_gpus", "0", "positive whole number"),
        (FOUNDRY, "num_gpus", "8 and 99999999999", "up to 1,048,576"),
        (FOUNDRY, "gpus_per_node", "100000", "up to 1,024"),
        (FOUNDRY, "tp", "99999999999999999999", "up to 1,048,576"),
        (FOUNDRY, "seq_len", "1e30", "positive whole number"),
        (FOUNDRY, "hidden", "9223372036854775808", "positive whole number"),
    ],
)
def test_zero_absurd_and_non_finite_values_name_file_row_and_column(
    tmp_path: Path, row: int, column: str, value: str, allowed: str
) -> None:
    rows = [list(r) for r in ROWS]
    rows[row][COLUMN[column]] = value
    path = _write(tmp_path, rows)
    with pytest.raises(InputFileError) as caught:
        load(path)
    _assert_names(caught.value, path, row, column)
    assert repr(value) in str(caught.value)
    assert allowed in str(caught.value)


def test_a_header_only_csv_is_a_named_error(tmp_path: Path) -> None:
    path = _write(tmp_path, [])  # traceback 6: KeyError
    with pytest.raises(InputFileError, match="no data rows") as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}:2: ")


def test_an_empty_csv_is_a_named_error(tmp_path: Path) -> None:
    path = tmp_path / "measurements.csv"
    path.write_text("")
    with pytest.raises(InputFileError, match="empty file"):
        load(path)


# --------------------------------------------------------------------------------------------
# sources.yaml drives the per-source rules


def _sources(tmp: Path, edit) -> Path:
    data = yaml.safe_load(SOURCES.read_text())
    edit(data)
    path = tmp / "sources.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _entry(data: dict, match: str) -> dict:
    return next(e for e in data["sources"] if e["match"] == match)


def _row(published: PublishedData, index: int):
    return published.throughput.set_index("csv_row").loc[index + 2]


def test_a_changed_assumption_in_sources_yaml_changes_the_normalised_row(tmp_path: Path) -> None:
    def edit(data: dict) -> None:
        _entry(data, "Narayanan")["assumptions"] = "an assumption written for this test"

    shipped = _row(load(), NARAYANAN)
    changed = _row(load(sources=_sources(tmp_path, edit)), NARAYANAN)
    assert "Megatron data parallelism = ddp" in shipped["assumptions"]
    assert changed["assumptions"].startswith("an assumption written for this test; ")


def test_rules_and_behaviours_come_from_sources_yaml(tmp_path: Path) -> None:
    def edit(data: dict) -> None:
        shoeybi = _entry(data, "Shoeybi")
        shoeybi["rules"]["system"] = "dgx-a100"
        shoeybi["rules"]["recompute"] = "selective"
        shoeybi["behaviours"][0]["set"]["tp_comm_overlap"] = True
        titan = _entry(data, "torchtitan benchmarks")
        titan["rules"]["pipeline_splits_local_batch"] = False

    shipped, changed = load(), load(sources=_sources(tmp_path, edit))
    before, after = _row(shipped, SHOEYBI), _row(changed, SHOEYBI)
    assert (before["system"], before["recompute"], before["tp_comm_overlap"]) == (
        "dgx2h-v100", "full", False,
    )  # fmt: skip
    assert (after["system"], after["recompute"], after["tp_comm_overlap"]) == (
        "dgx-a100", "selective", True,
    )  # fmt: skip
    # torchtitan's pipeline rows: the local batch is split into pp micro-batches only by the rule
    assert _row(shipped, TORCHTITAN_PP)["micro_batch"] < _row(changed, TORCHTITAN_PP)["micro_batch"]


def test_a_source_without_an_entry_gets_no_rules(tmp_path: Path) -> None:
    def edit(data: dict) -> None:
        data["sources"] = [e for e in data["sources"] if e["match"] != "Shoeybi"]

    published = load(sources=_sources(tmp_path, edit))
    rejected = published.rejects.set_index("csv_row")
    # without its entry, Shoeybi's weak-scaling rows have no single-GPU baseline to convert with
    assert rejected["reason"].str.contains("single-GPU baseline").any()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: _entry(d, "Shoeybi")["rules"].update(recompute="sometimes"), "recompute"),
        (lambda d: _entry(d, "llm-foundry").pop("citation"), "citation"),
        (lambda d: d["power_anchor"].update(drop_pct="a lot"), "drop_pct"),
        (lambda d: _entry(d, "Narayanan")["behaviours"][0]["set"].update(overlap=True), "overlap"),
    ],
)
def test_sources_yaml_is_checked_against_its_schema(tmp_path: Path, edit, expected: str) -> None:
    path = _sources(tmp_path, edit)
    with pytest.raises(InputFileError, match=expected) as caught:
        load_sources(path, frameworks=CATALOGUE.framework_keys)
    assert str(caught.value).startswith(str(path))


def test_two_entries_for_one_source_are_refused(tmp_path: Path) -> None:
    def edit(data: dict) -> None:
        data["sources"].append({"match": "Narayanan et al.", "citation": "x", "reason": "y"})

    with pytest.raises(InputFileError, match="matches several entries"):
        load(sources=_sources(tmp_path, edit))
