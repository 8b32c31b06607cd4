"""Write several output files all-or-nothing: temporary files in the target folder, then rename."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__: list[str] = []


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
            temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            temps.append(temp)
        yield temps
        for temp, target in zip(temps, targets, strict=True):
            os.replace(temp, target)
    except BaseException:
        for temp in temps:
            temp.unlink(missing_ok=True)
        raise


def with_suffix(stem: str | os.PathLike[str], suffix: str) -> Path:
    """``stem`` + ``suffix`` as a path, keeping any dots already in the stem's name."""
    return Path(f"{os.fspath(stem)}{suffix}")
