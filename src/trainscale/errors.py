"""The one user-facing error type (Calculon's ``Llm.Error`` idea).

Everything a user can get wrong (a file, a row, a key, a value) raises :class:`TrainscaleError`
or a subclass, with a message that names where the problem is and what is allowed. The CLI and
the workflow scripts catch only this type; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["ConfigurationError", "InputFileError", "TrainscaleError", "clip", "row_numbering"]

#: Characters of a whole message about a file, beyond which it is cut (:func:`clip`).
MAX_MESSAGE_CHARS = 20_000
#: Characters of a value shown in a message before it is cut (:func:`clip`).
CLIP_CHARS = 200


def clip(value: object, limit: int = CLIP_CHARS) -> str:
    """``str(value)``, cut to ``limit`` characters with how many more there were: a message
    quotes a value, never a megabyte of it."""
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def row_numbering(origin: str) -> str:
    """How the row numbers of a message about the table file ``origin`` read, e.g. `` (row 0 is
    the first data row, line 2 of the CSV)``; empty for anything that is not a table file (a
    study's grid, the command line). Rows are 0-based positions everywhere: the messages, the
    ``row`` column of rejects tables, pandas' ``iloc``."""
    name = origin.lower()
    if name.endswith(".csv"):
        return " (row 0 is the first data row, line 2 of the CSV)"
    if name.endswith(".parquet"):
        return " (row 0 is the first row)"
    return ""


class TrainscaleError(Exception):
    """A problem with the user's input, reported with where it is and what is allowed."""


class InputFileError(TrainscaleError):
    """A file that cannot be read or parsed; the message names the file (and line, if known)."""

    def __init__(self, path: object, message: str, *, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {clip(message, MAX_MESSAGE_CHARS)}")
        self.path = str(path)
        self.line = line


class ConfigurationError(TrainscaleError):
    """One or more invalid configuration rows.

    ``problems`` holds one ``(row, column, message)`` per problem; ``row`` is the 0-based row
    position in the input table (the CLI adds the file name, and for a table file how its rows
    count, :func:`row_numbering`).
    """

    def __init__(self, problems: list[tuple[int, str, str]], *, origin: str = "input") -> None:
        self.problems = problems
        self.origin = origin
        lines = [f"{origin}: {len(problems)} invalid value(s){row_numbering(origin)}:"]
        lines += [f"  row {row}, column '{column}': {message}" for row, column, message in problems]
        super().__init__("\n".join(lines))
