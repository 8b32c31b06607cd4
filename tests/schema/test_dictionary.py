"""The data dictionary (src/trainscale/schema/columns.yaml): it loads, every table of it is a
constant of trainscale.schema and every constant comes from it, every column has a valid dtype
and a unit, and a dictionary that breaks the layout is refused naming the table and column."""

from __future__ import annotations

from importlib.resources import files

import pytest

import trainscale.schema as schema
from trainscale.io.yaml import safe_load
from trainscale.schema import choices, shared
from trainscale.schema.column import ARROW_TYPES
from trainscale.schema.dictionary import (
    DICTIONARY_FILE,
    DictionaryError,
    load_dictionary,
    parse_dictionary,
)


def _shipped_text() -> str:
    return files("trainscale.schema").joinpath(DICTIONARY_FILE).read_text(encoding="utf-8")


def test_every_table_is_a_constant_and_every_constant_a_table():
    tables = load_dictionary().tables
    constants = {name for name in schema.__all__ if name.endswith("_COLUMNS")}
    assert set(tables) == constants
    for name in constants:
        assert getattr(schema, name) is tables[name], name


def test_every_column_has_a_valid_dtype_a_unit_and_a_description():
    for name, columns in load_dictionary().tables.items():
        assert columns, name
        for c in columns:
            assert c.dtype in ARROW_TYPES, (name, c.name, c.dtype)
            assert isinstance(c.unit, str) and c.unit.strip() == c.unit != "", (name, c.name)
            assert c.description.strip() == c.description != "", (name, c.name)


def test_the_file_names_no_key_twice():
    # PyYAML keeps the last of two equal keys silently; trainscale.io.yaml refuses them.
    document = safe_load(_shipped_text())
    assert set(document) == {"shared", "tables"}


def test_an_alias_is_the_very_same_column_and_choices_are_the_tuples_of_choices():
    tables = load_dictionary().tables
    assert shared.X_MIN in tables["STUDY_FIT_COLUMNS"]
    assert any(c is shared.X_MIN for c in tables["STUDY_FIT_COLUMNS"])
    assert any(c is shared.RUN_ID for c in tables["SIM_VS_MEASURED_COLUMNS"])
    framework = next(c for c in schema.CONFIGURATION_COLUMNS if c.name == "framework")
    sharding = next(c for c in schema.CONFIGURATION_COLUMNS if c.name == "sharding")
    assert sharding.choices is choices.SHARDINGS
    assert framework.choices is None  # the framework list is catalogue data
    assert framework.default == "pytorch"
    assert [c.name for c in schema.RESULT_COLUMNS][: len(schema.CONFIGURATION_COLUMNS)] == [
        c.name for c in schema.CONFIGURATION_COLUMNS
    ]


_SHARED = "shared: {}\n"


def _tables(body: str) -> str:
    return _SHARED + "tables:\n" + body


_GOOD = """  A_COLUMNS:
    - {name: step_time_s, dtype: float64, unit: s, description: wall time of one step}
    - {name: gpu, dtype: string, unit: "1", description: GPU, choices: shardings}
"""


def test_a_good_dictionary_parses():
    parsed = parse_dictionary(
        _tables(_GOOD + "  B_COLUMNS:\n    - {table: A_COLUMNS, except: [gpu]}\n")
    )
    assert [c.name for c in parsed.tables["A_COLUMNS"]] == ["step_time_s", "gpu"]
    assert parsed.tables["B_COLUMNS"] == parsed.tables["A_COLUMNS"][:1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  T_COLUMNS:\n    - {name: x, dtype: float64, unit: s, description: d, unti: s}\n",
            "columns.yaml: table T_COLUMNS, column x: unknown key(s) 'unti'; a column has the keys",
        ),
        (
            "  T_COLUMNS:\n    - {dtype: float64, unit: s, description: d, nmae: x}\n",
            "table T_COLUMNS, column 1: unknown key(s) 'nmae'",
        ),
        (
            "  T_COLUMNS:\n    - {name: x, dtype: float32, unit: s, description: d}\n",
            "table T_COLUMNS, column x: dtype 'float32' is not one of int64, float64",
        ),
        (
            "  T_COLUMNS:\n    - {name: x, dtype: float64, unit: '', description: d}\n",
            "table T_COLUMNS, column x: unit must be a non-empty string",
        ),
        (
            "  T_COLUMNS:\n    - {name: x, dtype: float64, description: d}\n",
            "table T_COLUMNS, column x: missing key(s) unit",
        ),
        (
            "  T_COLUMNS:\n    - {name: x, dtype: string, unit: '1', description: d, "
            "choices: framework}\n",
            "table T_COLUMNS, column x: choices 'framework' names no tuple",
        ),
        (
            "  T_COLUMNS:\n    - {table: A_COLUMNS}\n",
            "table T_COLUMNS, entry 1: table 'A_COLUMNS' is not defined above",
        ),
        (
            _GOOD + "  T_COLUMNS:\n    - {table: A_COLUMNS, exept: [gpu]}\n",
            "table T_COLUMNS, entry 1: unknown key(s) 'exept'; a table entry has the keys",
        ),
        (
            _GOOD + "  T_COLUMNS:\n    - {table: A_COLUMNS, except: [gpus]}\n",
            "table T_COLUMNS, entry 1: table A_COLUMNS has no column(s) gpus",
        ),
        (
            _GOOD + "  T_COLUMNS:\n    - {table: A_COLUMNS}\n    - {table: A_COLUMNS}\n",
            "table T_COLUMNS, column step_time_s: named twice in the table",
        ),
        (
            _GOOD + "  T_COLUMNS:\n    - {table: A_COLUMNS, except: gpu}\n",
            "table T_COLUMNS, entry 1: except is a list of column names, not 'gpu'",
        ),
        ("  T_COLUMNS: []\n", "table T_COLUMNS: a table is a non-empty list of columns"),
    ],
)
def test_a_broken_dictionary_is_refused_naming_table_and_column(body: str, message: str):
    with pytest.raises(DictionaryError) as raised:
        parse_dictionary(_tables(body))
    assert message in str(raised.value)


def test_unknown_keys_are_refused_in_the_shared_section_and_at_the_top():
    with pytest.raises(DictionaryError, match="shared, column x: unknown key"):
        parse_dictionary(
            "shared:\n  X: {name: x, dtype: int64, unit: '1', description: d, units: s}\n"
            "tables: {}\n"
        )
    with pytest.raises(DictionaryError, match="exactly shared and tables"):
        parse_dictionary(_SHARED + "tables: {}\ncolumns: {}\n")


def test_the_framework_default_is_the_default_framework() -> None:
    from trainscale.schema import CONFIGURATION_COLUMNS
    from trainscale.schema.choices import DEFAULT_FRAMEWORK

    (framework,) = [c for c in CONFIGURATION_COLUMNS if c.name == "framework"]
    assert framework.default == DEFAULT_FRAMEWORK
    assert framework.choices is None
