"""The one atomic writer: every file or folder trainscale writes appears complete or not at all.

A target is written under a temporary name next to it (:func:`temporary_name`:
``.<name>.<12 hex digits>.tmp``, random, so two writers never share one) and renamed onto the
target only when the write succeeded; on any error the temporary is deleted and the target is
left as it was. :func:`atomic_paths` does it for several files at once (all or nothing),
:func:`atomic_path` for one, :func:`write_text_atomic` for a text file and
:func:`atomic_directory` for a folder (the old folder is replaced as a whole).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_directory",
    "atomic_path",
    "atomic_paths",
    "is_temporary_of",
    "temporary_name",
    "with_suffix",
    "write_text_atomic",
]


def temporary_name(target: Path) -> Path:
    """A fresh temporary path next to ``target``: ``.<name>.<12 hex digits>.tmp``."""
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")


def is_temporary_of(candidate: Path, target: Path) -> bool:
    """Whether ``candidate`` is named as :func:`temporary_name` names temporaries of ``target``."""
    pattern = rf"\.{re.escape(target.name)}\.[0-9a-f]{{12}}\.tmp"
    return candidate.parent == target.parent and re.fullmatch(pattern, candidate.name) is not None


@contextmanager
def atomic_paths(targets: Sequence[Path]) -> Iterator[list[Path]]:
    """Yield one empty temporary path per target, next to it; rename them onto the targets on
    success, delete them on any error (the targets are then left as they were).

    The temporary files are created with mode ``0o666`` minus the umask, like ``open(..., "w")``,
    so the renamed outputs get ordinary permissions.
    """
    temps: list[Path] = []
    try:
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = temporary_name(target)
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            temps.append(temp)
        yield temps
        for temp, target in zip(temps, targets, strict=True):
            os.replace(temp, target)
    except BaseException:
        for temp in temps:
            temp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """:func:`atomic_paths` for one file: ``with atomic_path(p) as temp: write(temp)``."""
    with atomic_paths([Path(target)]) as (temp,):
        yield temp


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` atomically."""
    with atomic_path(Path(target)) as temp:
        temp.write_text(text, encoding="utf-8")


@contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield an empty temporary folder next to ``target``; on success the old ``target`` (if
    any) is removed and the temporary renamed onto it, on any error the temporary is removed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = temporary_name(target)
    temp.mkdir()
    try:
        yield temp
        if target.exists():
            shutil.rmtree(target)
        os.replace(temp, target)
    finally:
        if temp.exists():
            shutil.rmtree(temp)


def with_suffix(stem: str | os.PathLike[str], suffix: str) -> Path:
    """``stem`` + ``suffix`` as a path, keeping any dots already in the stem's name."""
    return Path(f"{os.fspath(stem)}{suffix}")
