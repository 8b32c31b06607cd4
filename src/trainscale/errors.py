"""The one user-facing error type (Calculon's ``Llm.Error`` idea).

Everything a user can get wrong (a file, a row, a key, a value) raises :class:`TrainscaleError`
or a subclass, with a message that names where the problem is and what is allowed. The CLI and
the workflow scripts catch only this type; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["ConfigurationError", "InputFileError", "TrainscaleError"]


class TrainscaleError(Exception):
    """A problem with the user's input, reported with where it is and what is allowed."""


class InputFileError(TrainscaleError):
    """A file that cannot be read or parsed; the message names the file (and line, if known)."""

    def __init__(self, path: object, message: str, *, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


class ConfigurationError(TrainscaleError):
    """One or more invalid configuration rows.

    ``problems`` holds one ``(row, column, message)`` per problem; ``row`` is the 0-based row
    position in the input table (the CLI adds the file name).
    """

    def __init__(self, problems: list[tuple[int, str, str]], *, origin: str = "input") -> None:
        self.problems = problems
        self.origin = origin
        lines = [f"{origin}: {len(problems)} invalid value(s):"]
        lines += [f"  row {row}, column '{column}': {message}" for row, column, message in problems]
        super().__init__("\n".join(lines))
