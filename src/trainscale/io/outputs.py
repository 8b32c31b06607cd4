"""The one check that no output overwrites an input, and that an output's suffix is one the
writer writes.

Every command (``predict``, ``ingest``, ``calibrate``, ``trace``, ``validate``, ``list``) and
every workflow script (:mod:`trainscale.workflow`) calls :func:`check_outputs` with
all the paths it will write and all the paths it will read, before anything is read or written.
Two paths are one file when their resolved paths are equal (a symlink followed) or, where both
exist, when ``os.stat`` gives the same device and inode (a hard link, a bind mount). A folder
among the inputs (a run folder, a folder of measurements) stands for every file inside it,
recursively. Two outputs naming one file are a clash too (``ingest -o X --steps X``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from trainscale.errors import TrainscaleError

__all__ = ["check_outputs", "check_suffix", "same_file"]

#: At most this many files of one input folder are compared (a bound on the walk).
MAX_FOLDER_FILES = 100_000


def _identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``path`` (following symlinks), None when it does not exist."""
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat.st_dev, stat.st_ino


def _resolved(path: Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop
        return Path(os.path.abspath(path))


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` name one file: equal resolved paths, or equal device and inode
    where both exist (hard links)."""
    if _resolved(Path(a)) == _resolved(Path(b)):
        return True
    first, second = _identity(Path(a)), _identity(Path(b))
    return first is not None and first == second


def _files(path: Path) -> Iterator[Path]:
    """``path`` itself, and for a folder every entry under it (symlinks included, not
    followed into), at most :data:`MAX_FOLDER_FILES`."""
    yield path
    if not path.is_dir():
        return
    count = 0
    for root, dirs, names in os.walk(path, followlinks=False):
        for name in sorted(dirs) + sorted(names):
            count += 1
            if count > MAX_FOLDER_FILES:
                return
            yield Path(root, name)


def check_suffix(path: Path, allowed: Sequence[str], option: str) -> None:
    """Refuse an output ``path`` whose suffix (case-insensitive) is not in ``allowed``.

    Raises
    ------
    TrainscaleError
        Naming the path, the option and the suffixes it writes.
    """
    if Path(path).suffix.lower() not in allowed:
        raise TrainscaleError(
            f"{path}: {option} writes {' or '.join(allowed)}; the suffix "
            f"{Path(path).suffix or '(none)'!r} would name a file of another format"
        )


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str] | None],
    *,
    suffixes: Mapping[str, Sequence[str]] | None = None,
    folders: bool = False,
) -> None:
    """Refuse outputs that would overwrite an input or each other, or carry a wrong suffix.

    Parameters
    ----------
    outputs
        Option name (``-o``, ``--steps``) → path written (None: not written).
    inputs
        Every path read; a folder stands for every file inside it.
    suffixes
        Option name → the suffixes its writer writes (``(".parquet",)``).
    folders
        Outputs may be folders (a workflow rule's ``directory()`` output, replaced whole).

    Raises
    ------
    TrainscaleError
        Naming the option, the output path and the input it would overwrite.
    """
    given = {option: Path(path) for option, path in outputs.items() if path is not None}
    for option, allowed in (suffixes or {}).items():
        if option in given:
            check_suffix(given[option], allowed, option)
    for option, path in given.items():
        if path.is_dir() and not folders:
            raise TrainscaleError(f"{path}: {option} names a folder; give a file name")
    names = list(given.items())
    for i, (option, path) in enumerate(names):
        for other, other_path in names[i + 1 :]:
            if same_file(path, other_path):
                raise TrainscaleError(
                    f"{path}: {option} and {other} name one file; writing both would lose one"
                )
    targets = [(option, path, _resolved(path), _identity(path)) for option, path in names]
    for source in (Path(p) for p in inputs if p is not None):
        for file in _files(source):
            resolved, identity = _resolved(file), _identity(file)
            for option, path, target, target_id in targets:
                if target == resolved or (identity is not None and identity == target_id):
                    inside = f" (inside {source})" if file != source else ""
                    raise TrainscaleError(
                        f"{path}: {option} names the input {file}{inside}; writing it would "
                        "overwrite the input: choose another output file"
                    )
