"""Reading the YAML inputs (studies, run manifests, catalogues) with errors that name the file,
line and key.

:class:`UniqueKeyLoader` is PyYAML's ``SafeLoader`` that refuses a mapping with the same key
twice: plain PyYAML keeps the last value silently, so a study with ``sharding`` written twice
would run only the second one. Merge keys (``<<``) may still be overridden, as YAML intends.

The loader is bounded (:class:`BoundedLoader`): nesting deeper than :data:`MAX_DEPTH` and a
document whose aliases expand to more than :data:`MAX_NODES` nodes are refused while composing,
before anything is built (a 2 KB file of nested aliases would otherwise expand to gigabytes), and
a recursive alias is refused. Numbers are read as YAML 1.2 writes them: the YAML 1.1 forms that
PyYAML still reads (``0100`` as octal 64, ``1:40`` as base-60 100, ``0b101``, ``1_000``) are an
error naming the key, since a 1.2 reader (and a person) reads them otherwise. ``1e3`` is the
number 1000, as in YAML 1.2 (PyYAML's 1.1 reading made it the text ``'1e3'``). Long values are
cut in messages (:func:`clip`).

The events come from libyaml, PyYAML's C parser, where PyYAML was built with it
(:class:`LibyamlLoader`); the composer, its bounds, the resolvers and constructors are
PyYAML's Python ones either way, and every error is PyYAML's own (:func:`_load`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import yaml

from trainscale.errors import InputFileError, clip

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "BoundedLoader",
    "DuplicateKeyError",
    "LibyamlLoader",
    "UniqueKeyLoader",
    "compose",
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


#: Deepest nesting of sequences and mappings accepted (the shipped files nest at most 12 deep).
MAX_DEPTH = 64
#: Most nodes a document may hold, every alias counted as the nodes it stands for (the shipped
#: files hold fewer than 5,000).
MAX_NODES = 200_000

#: YAML 1.2 core-schema numbers (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_INT_12 = r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
_FLOAT_12 = (
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
#: Plain scalars that YAML 1.1 reads as numbers and YAML 1.2 does not, or reads otherwise.
_YAML11_NUMBER = re.compile(
    r"[-+]?0[0-9_]+(?:\.[0-9_]*)?"  # leading zero: 1.1 octal (0100 = 64), 1.2 decimal
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"  # base 60: 1:40 = 100
    r"|[-+]?0b[01_]+|[-+]?0x[0-9a-fA-F_]*_[0-9a-fA-F_]*"  # binary, hex with _
    r"|[-+]?[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?(?:[eE][-+][0-9]+)?"  # 1_000
    r"|[-+]?\.[0-9_]+_[0-9_]*"
)
_YAML11_TAG = "tag:trainscale,2024:yaml11-number"


class BoundedLoader(UniqueKeyLoader):
    """:class:`UniqueKeyLoader` bounded in nesting (:data:`MAX_DEPTH`) and expanded size
    (:data:`MAX_NODES`), reading numbers as YAML 1.2 (module docstring)."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if not tag.endswith((":int", ":float"))]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:  # its anchor's value is still being read
                raise yaml.composer.ComposerError(
                    None, None, "an alias (*name) inside the value it names: endless", mark
                )
            self._add(self._sizes[id(node)], mark)  # everything under its anchor again
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"nested more than {MAX_DEPTH} levels deep",
                self.peek_event().start_mark,
            )
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._sizes[id(node)] = 1 + sum(self._sizes[id(child)] for child in _children(node))
        self._add(1, node.start_mark)  # its children were counted as they were read
        return node

    def _add(self, nodes: int, mark: yaml.Mark) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"more than {MAX_NODES:,} values once its aliases (*name) are expanded; "
                "write the values out, or use fewer aliases",
                mark,
            )

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        _refuse_yaml11_numbers(node)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def _refuse_yaml11_numbers(root: yaml.Node) -> None:
    """Raise naming the key of the first scalar written as a YAML 1.1-only number."""
    for key, node in _walk(root):
        if node.tag == _YAML11_TAG:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key '{key}': {clip(node.value)} is a YAML 1.1 number "
                f"({_yaml11_kind(node.value)}), which YAML 1.2 reads otherwise; write the "
                "plain decimal number, or quote it if it is text",
                node.start_mark,
            )


def _yaml11_kind(text: str) -> str:
    if ":" in text:
        return "base 60: 1:40 is 100"
    if "_" in text:
        return "digits with '_'"
    if text.lstrip("+-").startswith("0b"):
        return "binary"
    return "a leading zero: octal, 0100 is 64"


def _walk(root: yaml.Node) -> list[tuple[str, yaml.Node]]:
    """Every node once (aliases not followed again), in document order, with the key path of
    its first occurrence (``sweep.num_gpus[3]``)."""
    seen: set[int] = set()
    out: list[tuple[str, yaml.Node]] = []
    stack: list[tuple[str, yaml.Node]] = [("", root)]
    while stack:
        key, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append((key or "(top level)", node))
        if isinstance(node, yaml.SequenceNode):
            stack += [(f"{key}[{i}]", child) for i, child in enumerate(node.value)][::-1]
        elif isinstance(node, yaml.MappingNode):
            for key_node, child in reversed(node.value):
                name = (
                    clip(str(key_node.value), 60) if isinstance(key_node, yaml.ScalarNode) else "?"
                )
                path = f"{key}.{name}" if key else name
                stack += [(path, child), (path, key_node)]
    return out


BoundedLoader.add_implicit_resolver(
    _YAML11_TAG, re.compile(rf"^(?:{_YAML11_NUMBER.pattern})$"), list("-+0123456789.")
)
BoundedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(rf"^(?:{_INT_12})$"), list("-+0123456789")
)
BoundedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(rf"^(?:{_FLOAT_12})$"), list("-+0123456789.")
)


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith("0x") else int(text)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text == ".nan" else float(text)


BoundedLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
BoundedLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


class LibyamlLoader(BoundedLoader):
    """:class:`BoundedLoader` reading its parser events from libyaml, PyYAML's C parser
    (``yaml.cyaml.CParser``, in PyYAML's wheels): the same composer with its bounds, the same
    resolvers and constructors, only the scanning and parsing in C, which is four fifths of
    the time (0.15 s against 0.65 s for the shipped YAML files). Its events are PyYAML's own
    event objects, with marks of the same line and column.

    A document it refuses is read again by :class:`BoundedLoader` (:func:`_load`), so an error
    is always PyYAML's message and mark."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # PyYAML's reader checks the characters first
        self._events = yaml.cyaml.CParser(stream)

    def check_event(self, *choices: type[yaml.Event]) -> bool:
        return self._events.check_event(*choices)

    def peek_event(self) -> yaml.Event:
        return self._events.peek_event()

    def get_event(self) -> yaml.Event:
        return self._events.get_event()

    def dispose(self) -> None:
        super().dispose()
        self._events.dispose()


#: The loaders :func:`_load` tries, fastest first: libyaml's events where PyYAML was built with
#: it, then PyYAML's pure-Python reader.
_LOADERS: tuple[type[BoundedLoader], ...] = (
    (LibyamlLoader, BoundedLoader) if getattr(yaml, "__with_libyaml__", False) else (BoundedLoader,)
)


def _load(text: str, read: Callable[[BoundedLoader], Any]) -> Any:
    """``read(loader)`` on ``text`` with the first of :data:`_LOADERS` that reads it.

    A text the faster loader refuses goes to PyYAML's, whose error is raised: PyYAML's own
    message and line. A document that libyaml refuses and PyYAML reads is read, as before
    libyaml was used; one that PyYAML refuses and libyaml reads is read too, as libyaml (the
    reference YAML parser) reads it. A recursion too deep for Python is a
    :class:`yaml.YAMLError`."""
    problem = _flow_depth_problem(text)
    if problem is not None:
        raise problem
    *faster, last = _LOADERS
    for loader_class in faster:
        with contextlib.suppress(yaml.YAMLError, RecursionError):
            return _read(loader_class, text, read)
    try:
        return _read(last, text, read)
    except RecursionError:
        raise yaml.YAMLError(f"nested more than {MAX_DEPTH} levels deep") from None


def _read(
    loader_class: type[BoundedLoader], text: str, read: Callable[[BoundedLoader], Any]
) -> Any:
    loader = loader_class(text)
    try:
        return read(loader)
    finally:
        loader.dispose()


def compose(text: str) -> yaml.Node | None:
    """The document's node tree (for line numbers), with :class:`BoundedLoader`'s bounds."""
    return _load(text, BoundedLoader.get_single_node)


def _flow_depth_problem(text: str) -> yaml.YAMLError | None:
    """A nesting of flow brackets (``[``, ``{``) deeper than :data:`MAX_DEPTH`, found by one
    linear pass that skips quoted text and comments. PyYAML's scanner looks ahead to the end of
    a flow collection before it yields its first token, which takes time quadratic in the
    nesting (0.2 s for 500 brackets, minutes for 10,000), so this runs before it."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # no nesting can be deeper than the brackets there are
    depth, quote, comment, line, start = 0, "", False, 0, 0
    previous = "\n"
    for index, char in enumerate(text):
        if char == "\n":
            line, comment, start = line + 1, False, index + 1
        elif comment:
            pass
        elif quote:
            if char == quote and not (quote == '"' and previous == "\\"):
                quote = ""
        elif char in "'\"" and previous in " \t\n[{,:":
            quote = char
        elif char == "#" and previous in " \t\n":
            comment = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                mark = yaml.Mark("<unicode string>", index, line, index - start, None, None)
                message = f"nested more than {MAX_DEPTH} levels deep"
                return yaml.composer.ComposerError(None, None, message, mark)
        elif char in "]}":
            depth = max(depth - 1, 0)
        previous = char
    return None


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with :class:`BoundedLoader`: no duplicate mapping key
    (:class:`DuplicateKeyError`), bounded depth and size, YAML 1.2 numbers.

    The parsing is libyaml's where PyYAML has it (:class:`LibyamlLoader`; PyYAML's own
    pure-Python reader takes about 0.1 s for the shipped calibration file), and a process
    often reads one file several times (each command reads the catalogues and the
    calibration; the published data reads sources.yaml): the last :data:`_PARSED` documents
    read are kept, keyed by their text, and each call returns its own copy.

    Raises
    ------
    yaml.YAMLError
        Any of these, with the line (``problem_mark``); a recursion too deep for Python is
        reported as one too, never as ``RecursionError``. A text that raised is not kept.
    """
    return copy.deepcopy(_parsed(text))


#: How many parsed documents :func:`safe_load` keeps (the shipped inputs are about a dozen files).
_PARSED = 32


@functools.lru_cache(maxsize=_PARSED)
def _parsed(text: str) -> Any:
    """The work of :func:`safe_load`: the document, shared (:func:`safe_load` copies it)."""
    return _load(text, BoundedLoader.get_single_data)


def yaml_error(path: object, error: yaml.YAMLError) -> InputFileError:
    """An :class:`InputFileError` naming the file and line of a YAML error."""
    mark = getattr(error, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    if isinstance(error, DuplicateKeyError):
        return InputFileError(path, f"invalid YAML: {error.problem}", line=line)
    problem = getattr(error, "problem", None) or error
    return InputFileError(path, f"invalid YAML: {clip(str(problem), 300)}", line=line)


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
