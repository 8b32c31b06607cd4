"""A "did you mean" hint for a name that is not one of the allowed ones.

Close means :func:`difflib.get_close_matches` at :data:`CUTOFF`, compared after
:func:`normalised` (case, and the separators space, ``-``, ``.``, ``/``, all one ``_``),
or the one key the name begins: ``llama2-7B`` finds ``llama2-7b``, ``megatorn`` finds
``megatron``, ``h200`` finds ``h200-sxm-141gb``, while an unrelated word gets no hint (the error
lists the valid names). GPUs are also matched by their catalogue aliases
(:mod:`trainscale.sim.configs`), so ``H100`` finds ``h100-sxm-80gb``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["CUTOFF", "closest", "did_you_mean", "normalised"]

_SEPARATORS = re.compile(r"[\s\-./_]+")


def normalised(name: object) -> str:
    """``name`` in lower case with every run of separators (space, ``-``, ``.``, ``/``, ``_``)
    one ``_`` and none at the ends: ``Power-Limit W`` and ``power_limit_w`` are one name."""
    return _SEPARATORS.sub("_", str(name).strip().lower()).strip("_")


#: The difflib ratio a name must reach to be suggested: a typo scores high (``lama2-7b`` ->
#: ``llama2-7b`` 0.94, ``llama-70b`` -> ``llama2-70b`` 0.95, ``a100-80gb`` -> ``a100-sxm-80gb``
#: 0.82), a different name lower (``llama9`` -> ``llama2-1b`` 0.67, ``dgx-z`` -> ``dgx-a100``
#: 0.62), so 0.7 rather than difflib's 0.6. A short name that begins one key only
#: (``mpt-3`` -> ``mpt-30b``) is suggested whatever its ratio.
CUTOFF = 0.7


def closest(name: object, choices: Iterable[str]) -> str | None:
    """The allowed name closest to ``name``, or None when none is close; a choice that
    ``name`` is a prefix of wins over a mere spelling match (``h100`` -> ``h100-sxm-80gb``)."""
    text = normalised(name)
    if not text:
        return None
    options = sorted(choices)
    by_lower = {normalised(c): c for c in options}
    if text in by_lower:
        return by_lower[text]
    prefixed = [c for c in options if normalised(c).startswith(text)]
    if len(prefixed) == 1:
        return prefixed[0]
    match = difflib.get_close_matches(text, list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[match[0]] if match else None


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to ``name``, else an empty string."""
    match = closest(name, choices)
    return f" (did you mean {match!r}?)" if match is not None else ""
