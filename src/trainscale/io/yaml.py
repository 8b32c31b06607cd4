"""Reading the YAML inputs (studies, run manifests, catalogues) with errors that name the file,
line and key.

:class:`UniqueKeyLoader` is PyYAML's ``SafeLoader`` that refuses a mapping with the same key
twice: plain PyYAML keeps the last value silently, so a study with ``sharding`` written twice
would run only the second one. Merge keys (``<<``) may still be overridden, as YAML intends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainscale.errors import InputFileError

__all__ = [
    "DuplicateKeyError",
    "UniqueKeyLoader",
    "decode_utf8",
    "load_yaml",
    "require_keys",
    "safe_load",
    "yaml_error",
]


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping that names the same key twice; ``problem_mark`` is the second occurrence."""

    def __init__(self, key: object, first_line: int, mark: yaml.Mark) -> None:
        super().__init__(
            None,
            None,
            f"duplicate key {key!r} (first at line {first_line}); each key may appear once",
            mark,
        )
        self.key = key
        self.first_line = first_line


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises :class:`DuplicateKeyError` for a repeated mapping key."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # the base class reports unhashable keys
                if key in seen:
                    raise DuplicateKeyError(key, seen[key], key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)  # type: ignore[arg-type]


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` that rejects duplicate mapping keys (:class:`DuplicateKeyError`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass


def yaml_error(path: object, error: yaml.YAMLError) -> InputFileError:
    """An :class:`InputFileError` naming the file and line of a YAML error."""
    mark = getattr(error, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    if isinstance(error, DuplicateKeyError):
        return InputFileError(path, f"invalid YAML: {error.problem}", line=line)
    problem = getattr(error, "problem", None) or error
    return InputFileError(path, f"invalid YAML: {problem}", line=line)


def decode_utf8(path: object, raw: bytes) -> str:
    """``raw`` decoded as UTF-8 (a leading byte-order mark dropped).

    Raises
    ------
    InputFileError
        Naming the file, the line (1-based) and column of the first byte that is not UTF-8, and
        that the file must be saved as UTF-8 (a Latin-1 or Windows-1252 editor writes ``é`` as
        the single byte 0xe9).
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        before = raw[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise InputFileError(
            path,
            f"not UTF-8 text: byte 0x{raw[error.start]:02x} at column {column} cannot be "
            "decoded; save the file as UTF-8",
            line=line,
        ) from None


def load_yaml(path: Path) -> dict[str, Any]:
    """Load a YAML mapping; raise :class:`InputFileError` naming the file (and line) if invalid,
    including a key that appears twice in one mapping and text that is not UTF-8
    (:func:`decode_utf8`)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputFileError(path, f"cannot read: {error.strerror}") from error
    text = decode_utf8(path, raw)
    try:
        data = safe_load(text)
    except yaml.YAMLError as error:
        raise yaml_error(path, error) from error
    if not isinstance(data, dict):
        raise InputFileError(path, "expected a mapping at the top level")
    return data


def require_keys(path: Path, where: str, entry: dict[str, Any], required: tuple[str, ...]) -> None:
    """Raise :class:`InputFileError` if ``entry`` (at ``where`` in ``path``) lacks a key."""
    if not isinstance(entry, dict):
        raise InputFileError(path, f"{where}: expected a mapping, got {type(entry).__name__}")
    missing = [key for key in required if key not in entry]
    if missing:
        raise InputFileError(path, f"{where}: missing key(s) {', '.join(missing)}")
