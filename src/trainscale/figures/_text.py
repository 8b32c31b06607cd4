"""Text helpers of the figures."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at the last word boundary that fits (never
    mid-word) with ``…`` after it; whitespace collapsed. A first word longer than ``width`` is
    cut at ``width - 1``."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    head = text[: width - 1]
    if text[width - 1] != " " and " " in head:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:—-") + "…"
