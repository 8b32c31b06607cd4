"""The data dictionary ``columns.yaml``: every table's columns, read once and checked.

Why the columns are data: a column is a fact (name, dtype, unit, meaning), not logic, and a table
is a list of them. Written as Python calls they read as code, repeat the same shape in every
module, and spread one table over several files. In one YAML file they are one place to read
every table's columns in order, to review a change of unit or wording (each description goes
into the Parquet field metadata, so changing it changes the files), and for docs or other tools
to render. The modules of :mod:`trainscale.schema` keep their public constants
(``CONFIGURATION_COLUMNS = table("CONFIGURATION_COLUMNS")``) and the logic: bounds, the pyarrow
schema, lookups.

The file's layout is described at its top. :func:`parse_dictionary` checks it strictly (an
unknown key, a dtype outside :data:`~trainscale.schema.column.Dtype`, an empty unit, a choice
list that :mod:`trainscale.schema.choices` lacks, a column named twice in one table all raise
:class:`DictionaryError` naming the table and column), because a typo there would otherwise
pass silently into every Parquet file. A YAML alias (``*gpu``) yields the very same
:class:`~trainscale.schema.column.Column` object as its anchor.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from importlib.resources import files
from typing import Any, get_args

import yaml

from trainscale.schema import choices
from trainscale.schema.column import Column, Dtype

__all__ = [
    "DICTIONARY_FILE",
    "Dictionary",
    "DictionaryError",
    "load_dictionary",
    "parse_dictionary",
    "shared_column",
    "table",
]

#: The data dictionary's file name, in the package ``trainscale.schema``.
DICTIONARY_FILE = "columns.yaml"

_COLUMN_KEYS = tuple(f.name for f in fields(Column))
_REQUIRED_KEYS = ("name", "dtype", "unit", "description")
_SPLICE_KEYS = ("table", "except")
_DTYPES: tuple[str, ...] = get_args(Dtype)


class DictionaryError(ValueError):
    """The data dictionary breaks its layout; the message names the file, table and column."""


@dataclass(frozen=True, slots=True)
class Dictionary:
    """The parsed data dictionary."""

    shared: dict[str, Column]
    """Columns that tables of different modules share, by their constant's name in
    :mod:`trainscale.schema.shared` (``RUN_ID``)."""
    tables: dict[str, tuple[Column, ...]]
    """Every table's columns in order, by its constant's name (``CONFIGURATION_COLUMNS``)."""


class _Reader:
    """Builds columns from the loaded YAML, one Column object per YAML node (so an alias is the
    same object as its anchor), and raises :class:`DictionaryError` with where the problem is."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.built: dict[int, Column] = {}
        self.tables: dict[str, tuple[Column, ...]] = {}

    def fail(self, where: str, problem: str) -> DictionaryError:
        return DictionaryError(f"{self.origin}: {where}: {problem}")

    def refuse_unknown_keys(
        self, entry: dict[Any, Any], allowed: tuple[str, ...], where: str, kind: str
    ) -> None:
        """Raise if ``entry`` has a key outside ``allowed`` (``kind`` names what it is)."""
        unknown = sorted(str(k) for k in entry if k not in allowed)
        if unknown:
            raise self.fail(
                where,
                f"unknown key(s) {', '.join(map(repr, unknown))}; {kind} has the keys "
                f"{', '.join(allowed)}",
            )

    def column(self, entry: object, place: str, label: object) -> Column:
        """The :class:`Column` of one column mapping: ``label`` (its place in the list, or its
        key) names it in errors until its name is known."""
        if id(entry) in self.built:
            return self.built[id(entry)]
        if not isinstance(entry, dict):
            raise self.fail(
                f"{place}, column {label}", f"a column is a mapping of {', '.join(_COLUMN_KEYS)}"
            )
        name = entry.get("name")
        where = f"{place}, column {name if isinstance(name, str) and name else label}"
        self.refuse_unknown_keys(entry, _COLUMN_KEYS, where, "a column")
        missing = [k for k in _REQUIRED_KEYS if k not in entry]
        if missing:
            raise self.fail(where, f"missing key(s) {', '.join(missing)}")
        for key in ("name", "unit", "description"):
            if not isinstance(entry[key], str) or not entry[key]:
                raise self.fail(where, f"{key} must be a non-empty string, not {entry[key]!r}")
        if entry["dtype"] not in _DTYPES:
            raise self.fail(where, f"dtype {entry['dtype']!r} is not one of {', '.join(_DTYPES)}")
        built = Column(**{**entry, "choices": self.choices(entry.get("choices"), where)})
        self.built[id(entry)] = built
        return built

    def choices(self, named: object, where: str) -> tuple[str, ...] | None:
        """The tuple of :mod:`trainscale.schema.choices` that ``named`` (``shardings``) names."""
        if named is None:
            return None
        allowed = getattr(choices, str(named).upper(), None) if isinstance(named, str) else None
        if not (isinstance(allowed, tuple) and named == str(named).lower()):
            raise self.fail(
                where,
                f"choices {named!r} names no tuple of trainscale.schema.choices (write its "
                "name in lower case, e.g. shardings)",
            )
        return allowed

    def splice(self, entry: dict[str, Any], where: str) -> tuple[Column, ...]:
        """The columns of an entry ``{table: NAME, except: [...]}``."""
        self.refuse_unknown_keys(entry, _SPLICE_KEYS, where, "a table entry")
        name = entry["table"]
        if name not in self.tables:
            raise self.fail(where, f"table {name!r} is not defined above")
        left_out = entry.get("except", [])
        if not isinstance(left_out, list):
            raise self.fail(where, f"except is a list of column names, not {left_out!r}")
        spliced = self.tables[name]
        absent = [n for n in left_out if n not in {c.name for c in spliced}]
        if absent:
            raise self.fail(where, f"table {name} has no column(s) {', '.join(map(str, absent))}")
        return tuple(c for c in spliced if c.name not in left_out)

    def table(self, name: str, entries: object) -> tuple[Column, ...]:
        """The columns of one table, its entries in order."""
        if not isinstance(entries, list) or not entries:
            raise self.fail(f"table {name}", "a table is a non-empty list of columns")
        columns: list[Column] = []
        for number, entry in enumerate(entries, start=1):
            if isinstance(entry, dict) and "table" in entry:
                columns.extend(self.splice(entry, f"table {name}, entry {number}"))
            else:
                columns.append(self.column(entry, f"table {name}", number))
        seen: set[str] = set()
        for c in columns:
            if c.name in seen:
                raise self.fail(f"table {name}, column {c.name}", "named twice in the table")
            seen.add(c.name)
        return tuple(columns)


def parse_dictionary(text: str, origin: str = DICTIONARY_FILE) -> Dictionary:
    """Parse and check a data dictionary's YAML ``text``; ``origin`` names it in errors."""
    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(document, dict) or set(document) != {"shared", "tables"}:
        keys = sorted(map(str, document)) if isinstance(document, dict) else document
        raise DictionaryError(
            f"{origin}: the file is a mapping of exactly shared and tables, not {keys!r}"
        )
    for section in ("shared", "tables"):
        if not isinstance(document[section], dict):
            raise DictionaryError(f"{origin}: {section} is a mapping of names")
    reader = _Reader(origin)
    shared = {
        name: reader.column(entry, "shared", name) for name, entry in document["shared"].items()
    }
    for name, entries in document["tables"].items():
        reader.tables[name] = reader.table(name, entries)
    return Dictionary(shared=shared, tables=reader.tables)


@functools.cache
def load_dictionary() -> Dictionary:
    """The data dictionary the package ships (``trainscale/schema/columns.yaml``), read once."""
    text = files("trainscale.schema").joinpath(DICTIONARY_FILE).read_text(encoding="utf-8")
    return parse_dictionary(text)


def table(name: str) -> tuple[Column, ...]:
    """The columns of the table ``name`` (its constant's name, e.g. ``CLAIM_COLUMNS``)."""
    return load_dictionary().tables[name]


def shared_column(name: str) -> Column:
    """The shared column ``name`` (its constant's name in :mod:`trainscale.schema.shared`)."""
    return load_dictionary().shared[name]
