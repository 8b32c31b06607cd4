"""The support part of the coverage facts (:class:`trainscale.sim.intervals.CoverageFacts`).

What the ``extrapolation`` flags (:mod:`trainscale.sim.support`) are checked against, computed
from a calibration's throughput rows (result rows: ``framework``, ``sharding``, ``num_gpus``, the
model shape, ``seq_len``, ``tp``, ``pp``, ``cp``) by ``trainscale calibrate`` and stored in the
``intervals.coverage_facts`` block of the calibration file:

- ``sharding_max_gpus``: most GPUs of any run per framework x sharding (``{framework: {sharding:
  n}}`` in the file);
- ``params_b_range``: smallest and largest transformer-block parameters (10^9, 6 significant
  digits) of the rows with a known shape;
- ``seq_len_range``: shortest and longest sequence (tokens);
- ``max_degrees``: largest tp, pp and cp degree.

Each function works on a dict of those four fields (the keyword arguments of ``CoverageFacts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from trainscale.schema import SHARDINGS

__all__ = ["SUPPORT_COLUMNS", "CoverageFacts", "support_facts_as_dict", "support_facts_from_dict",
           "support_facts_merged", "support_facts_of"]  # fmt: skip

DEGREES = ("tp", "pp", "cp")
#: Columns rows need for the support facts (result rows have them).
SUPPORT_COLUMNS = ("sharding", "layers", "hidden", "heads", "kv_heads", "ffn", "mlp", "seq_len",
                   *DEGREES)  # fmt: skip


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def _finite_range(values: np.ndarray) -> tuple[float, float] | None:
    """(min, max) of the finite values, 6 significant digits; None when there are none (a
    result row whose input named a model but left its shape columns blank carries NaN shape
    columns, and is left out of the range)."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return None
    return (_round(float(finite.min())), _round(float(finite.max())))


def _union(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None:
        return a if b is None else b
    return (min(a[0], b[0]), max(a[1], b[1]))


def support_facts_of(rows: pd.DataFrame, framework_keys: Sequence[str]) -> dict[str, Any]:
    """The four support fields of ``rows`` (frameworks in the order of ``framework_keys``);
    empty (no facts) when rows are empty or lack a column of :data:`SUPPORT_COLUMNS`."""
    if len(rows) == 0 or not set(SUPPORT_COLUMNS) <= set(rows.columns):
        return {}
    from trainscale.sim.model.params import block_params_b

    pairs = rows.groupby(["framework", "sharding"])["num_gpus"].max()
    params = block_params_b(
        rows["layers"].to_numpy(), rows["hidden"].to_numpy(), rows["heads"].to_numpy(),
        rows["kv_heads"].to_numpy(), rows["ffn"].to_numpy(), (rows["mlp"] == "swiglu").to_numpy(),
    )  # fmt: skip
    return {
        "sharding_max_gpus": tuple(
            (fw, sh, int(pairs[(fw, sh)]))
            for fw in framework_keys
            for sh in SHARDINGS
            if (fw, sh) in pairs.index
        ),
        "params_b_range": _finite_range(params),
        "seq_len_range": (int(rows["seq_len"].min()), int(rows["seq_len"].max())),
        "max_degrees": tuple((d, int(rows[d].max())) for d in DEGREES),
    }


def support_facts_merged(a: Any, b: Any, framework_keys: Sequence[str]) -> dict[str, Any]:
    """The support fields of two facts (objects with the four attributes) together: the larger
    maxima, the union of the ranges; frameworks in the order of ``framework_keys``."""
    pairs = {(f, s): m for f, s, m in a.sharding_max_gpus}
    for f, s, m in b.sharding_max_gpus:
        pairs[(f, s)] = max(pairs.get((f, s), 0), m)
    degrees = dict(a.max_degrees)
    for d, m in b.max_degrees:
        degrees[d] = max(degrees.get(d, 0), m)
    return {
        "sharding_max_gpus": tuple(
            (f, s, pairs[(f, s)]) for f in framework_keys for s in SHARDINGS if (f, s) in pairs
        ),
        "params_b_range": _union(a.params_b_range, b.params_b_range),
        "seq_len_range": _union(a.seq_len_range, b.seq_len_range),
        "max_degrees": tuple((d, degrees[d]) for d in DEGREES if d in degrees),
    }


def support_facts_as_dict(facts: Any) -> dict[str, Any]:
    """The support fields as stored in the calibration file (absent when unknown)."""
    out: dict[str, Any] = {}
    if facts.sharding_max_gpus:
        pairs: dict[str, dict[str, int]] = {}
        for f, s, m in facts.sharding_max_gpus:
            pairs.setdefault(f, {})[s] = m
        out["sharding_max_gpus"] = pairs
    if facts.params_b_range is not None:
        out["params_b_range"] = list(facts.params_b_range)
    if facts.seq_len_range is not None:
        out["seq_len_range"] = list(facts.seq_len_range)
    if facts.max_degrees:
        out["max_degrees"] = dict(facts.max_degrees)
    return out


def support_facts_from_dict(data: dict[str, Any]) -> dict[str, Any]:
    """The support fields read back from the file's ``coverage_facts`` block."""
    params, seq = data.get("params_b_range"), data.get("seq_len_range")
    return {
        "sharding_max_gpus": tuple(
            (str(f), str(s), int(m))
            for f, per in data.get("sharding_max_gpus", {}).items()
            for s, m in per.items()
        ),
        "params_b_range": None if params is None else (float(params[0]), float(params[1])),
        "seq_len_range": None if seq is None else (int(seq[0]), int(seq[1])),
        "max_degrees": tuple((str(k), int(v)) for k, v in data.get("max_degrees", {}).items()),
    }


@dataclass(frozen=True, slots=True)
class CoverageFacts:
    """What the calibration data cover: rows and most GPUs per framework, GPUs with rows, and
    (for the ``extrapolation`` flags of :mod:`trainscale.sim.support`) most GPUs per framework x
    sharding, the range of transformer-block parameters (10^9) and of sequence lengths, and the
    largest tp, pp and cp degrees. The support facts are empty in a calibration file written
    before they existed (no flag of those kinds then: regenerate it with ``trainscale
    calibrate``)."""

    framework_rows: tuple[tuple[str, int], ...]
    framework_max_gpus: tuple[tuple[str, int], ...]
    gpus_with_data: tuple[str, ...]
    sharding_max_gpus: tuple[tuple[str, str, int], ...] = ()
    params_b_range: tuple[float, float] | None = None
    seq_len_range: tuple[int, int] | None = None
    max_degrees: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, rows: pd.DataFrame, framework_keys: Sequence[str]) -> CoverageFacts:
        """Facts of throughput rows (``framework``, ``num_gpus``, ``gpu``; the support facts
        when the rows also have ``sharding``, the model shape, ``seq_len``, ``tp``, ``pp``,
        ``cp``, as result rows do), for every framework of ``framework_keys`` (the caller's
        framework list, ``Catalogue.framework_keys``), in that order."""
        grouped = rows.groupby("framework")["num_gpus"]
        counts, most = grouped.size(), grouped.max()
        keys = tuple(framework_keys)
        base = cls(
            framework_rows=tuple((fw, int(counts.get(fw, 0))) for fw in keys),
            framework_max_gpus=tuple((fw, int(most[fw])) for fw in keys if fw in most.index),
            gpus_with_data=tuple(sorted(str(g) for g in rows["gpu"].unique())),
        )
        return replace(base, **support_facts_of(rows, keys))

    @property
    def framework_keys(self) -> tuple[str, ...]:
        """The framework list the facts were gathered for (:meth:`of`), in its order."""
        return tuple(fw for fw, _ in self.framework_rows)

    def merged(self, other: CoverageFacts) -> CoverageFacts:
        """Facts of both data sets together (a user calibration adds its rows to the shipped),
        for the frameworks of both (this one's first, in order)."""
        keys = tuple(dict.fromkeys((*self.framework_keys, *other.framework_keys)))
        rows = dict(self.framework_rows)
        for fw, n in other.framework_rows:
            rows[fw] = rows.get(fw, 0) + n
        most = dict(self.framework_max_gpus)
        for fw, n in other.framework_max_gpus:
            most[fw] = max(most.get(fw, 0), n)
        return CoverageFacts(
            framework_rows=tuple((fw, rows.get(fw, 0)) for fw in keys),
            framework_max_gpus=tuple((fw, most[fw]) for fw in keys if fw in most),
            gpus_with_data=tuple(sorted({*self.gpus_with_data, *other.gpus_with_data})),
            **support_facts_merged(self, other, keys),
        )

    def framework_arrays(self, framework_keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Rows and most GPUs per framework, in the order of ``framework_keys`` (the framework
        list the configurations' codes index; a framework without rows takes the most GPUs of
        any framework)."""
        rows = dict(self.framework_rows)
        most = dict(self.framework_max_gpus)
        overall = max(most.values(), default=1)
        return (
            np.array([rows.get(fw, 0) for fw in framework_keys], dtype=np.float64),
            np.array([most.get(fw, overall) for fw in framework_keys], dtype=np.float64),
        )

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "framework_rows": dict(self.framework_rows),
            "framework_max_gpus": dict(self.framework_max_gpus),
            "gpus_with_data": list(self.gpus_with_data),
        }
        out.update(support_facts_as_dict(self))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoverageFacts:
        return cls(
            framework_rows=tuple((str(k), int(v)) for k, v in data["framework_rows"].items()),
            framework_max_gpus=tuple(
                (str(k), int(v)) for k, v in data["framework_max_gpus"].items()
            ),
            gpus_with_data=tuple(str(g) for g in data["gpus_with_data"]),
            **support_facts_from_dict(data),
        )
