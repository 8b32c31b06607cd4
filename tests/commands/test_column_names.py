"""Close-name warnings for columns ignore case and separators: any spelling of a configuration
column that differs from it only in case or separators (and any close misspelling of those) is
named, never ignored in silence."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from trainscale.io.suggest import normalised
from trainscale.sim.inputs import _CONFIG_NAMES, _KNOWN_NAMES, unknown_column_warnings

NAMES = sorted(_CONFIG_NAMES)


@st.composite
def respelt(draw: st.DrawFn) -> tuple[str, str]:
    """A configuration column and a spelling of it in other case and separators."""
    name = draw(st.sampled_from([n for n in NAMES if len(n) > 3]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    parts = name.split("_")
    seps = [rng.choice(["_", "-", " ", ".", "__", "/"]) for _ in parts[1:]]
    text = parts[0] + "".join(s + p for s, p in zip(seps, parts[1:], strict=True))
    text = "".join(c.upper() if rng.random() < 0.5 else c for c in text)
    return name, text


@settings(max_examples=300, deadline=None)
@given(pair=respelt())
def test_any_case_and_separator_spelling_is_named(pair: tuple[str, str]) -> None:
    name, text = pair
    warnings = unknown_column_warnings([text])
    if text in _KNOWN_NAMES:  # the exact spelling: a known column, nothing to say
        assert not warnings
        return
    assert len(warnings) == 1 and f"did you mean {name!r}" in warnings[0]


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=30))
def test_normalised_is_idempotent_and_ignores_case(text: str) -> None:
    once = normalised(text)
    assert normalised(once) == once
    assert normalised(text.upper()) == normalised(text.lower()) or text.upper().lower() != (
        text.lower()
    )


def test_the_reported_example() -> None:
    assert unknown_column_warnings(["POWER_LIMIT_W"]) and unknown_column_warnings(["Num-GPUs"])
