"""The ``render`` of a figure module: its ``plot`` drawn under the one theme and saved
byte-reproducibly, with ``plot``'s own parameters (:func:`styled_render`)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from trainscale.figures._common import save_styled

__all__ = ["styled_render"]


def styled_render(plot: Callable[..., Figure]) -> Callable[..., tuple[Path, ...]]:
    """A figure module's ``render(stem, ...)``: ``plot`` called with the other arguments, drawn
    under the one theme and saved as ``stem.{pdf,png,svg}`` (:func:`save_styled`). Its signature
    is ``plot``'s with ``stem`` first, so it takes what ``plot`` takes: the figure's tables and
    catalogues by the names :data:`~trainscale.figures.FIGURES` gives them."""

    def render(stem: str | os.PathLike[str], *args: Any, **kwargs: Any) -> tuple[Path, ...]:
        return save_styled(lambda: plot(*args, **kwargs), stem)

    signature = inspect.signature(plot)
    first = inspect.Parameter("stem", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    render.__signature__ = signature.replace(
        parameters=[first, *signature.parameters.values()], return_annotation="tuple[Path, ...]"
    )
    render.__doc__ = f"Draw :func:`{plot.__module__}.plot` and save ``stem.{{pdf,png,svg}}``."
    render.__module__, render.__qualname__ = plot.__module__, "render"
    return render
