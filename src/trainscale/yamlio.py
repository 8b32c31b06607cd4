"""Reading the YAML catalogues with errors that name the file and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainscale.errors import InputFileError

__all__ = ["load_yaml", "require_keys"]


def load_yaml(path: Path) -> dict[str, Any]:
    """Load a YAML mapping; raise :class:`InputFileError` naming the file (and line) if invalid."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputFileError(path, f"cannot read: {error.strerror}") from error
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputFileError(path, f"invalid YAML: {error}", line=line) from error
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
