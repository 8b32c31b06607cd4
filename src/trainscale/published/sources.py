"""``data/published/sources.yaml``: the per-source rules and assumptions of the published CSV,
and the published power anchor (docs/published-data.md).

Its ``frameworks`` list (:class:`FrameworkPattern`) maps a row's framework text to a framework
profile (:func:`trainscale.published.matching.framework_profile`), so that a new stack in the
published data is a data change, as a new GPU's wording is (its ``aliases`` in
``data/hardware.yaml``). A CSV row belongs to the :class:`SourceRules` whose ``match`` is part
of its ``source`` text (at most one entry matches a source; a source no entry matches has no
rules). The file is checked against ``workflow/schemas/sources.schema.yaml`` when read; the rules
are applied by :mod:`trainscale.published.normalise` (throughput and collective rows); the anchor
is the paper's power figure the prediction is checked against
(:func:`trainscale.calibrate.fit.power_drop_pct`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from trainscale.errors import InputFileError
from trainscale.io.schema import check_document
from trainscale.io.yaml import load_yaml
from trainscale.paths import schema_file
from trainscale.sim.degrees import data_parallel_degree

__all__ = [
    "Behaviour",
    "FrameworkPattern",
    "PowerAnchor",
    "SourceRules",
    "Sources",
    "load_sources",
]


@dataclass(frozen=True, slots=True)
class Behaviour:
    """One behaviour override of a source: ``values`` (override -> value) and ``from_text``
    (override -> text; True where the row's text contains it) where every ``when`` condition
    holds; ``cite`` goes to the row's assumptions when it applies."""

    when: Mapping[str, Any]
    values: Mapping[str, object]
    from_text: Mapping[str, str]
    cite: str


@dataclass(frozen=True, slots=True)
class FrameworkPattern:
    """One entry of ``frameworks``: framework text matching ``pattern`` (a regular expression,
    searched in the lower-cased text) runs ``profile``, unless ``unless_pattern`` matches the
    row's sharding or notes text, which gives ``unless_profile``; ``describes`` names the stacks
    it covers."""

    pattern: str
    profile: str
    describes: str
    unless_pattern: str = ""
    unless_profile: str = ""


@dataclass(frozen=True, slots=True)
class SourceRules:
    """The rules of one source (an entry of ``sources.yaml``); empty defaults = no rule."""

    match: str = ""
    citation: str = ""
    reason: str = ""
    assumptions: str = ""
    rules: Mapping[str, Any] = field(default_factory=dict)
    behaviours: tuple[Behaviour, ...] = ()

    def rule(self, name: str, default: object = None) -> Any:
        """The value of rule ``name`` (``default`` where the entry does not set it)."""
        return self.rules.get(name, default)


@dataclass(frozen=True, slots=True)
class PowerAnchor:
    """A published drop of power per GPU: ``drop_pct`` percent from ``from_gpus`` to
    ``to_gpus`` GPUs of ``configuration`` (configuration-table columns without ``num_gpus``),
    with its ``source``, ``url``, ``table_or_figure`` and ``reason``."""

    source: str
    url: str
    table_or_figure: str
    drop_pct: float
    from_gpus: int
    to_gpus: int
    reason: str
    configuration: Mapping[str, object]

    def configurations(self) -> pd.DataFrame:
        """The configuration at ``from_gpus`` and ``to_gpus`` (two rows, in that order), the
        micro-batch capped at each count's local batch ``global_batch / dp``."""
        rows = []
        for n in (self.from_gpus, self.to_gpus):
            c = dict(self.configuration)
            dp = data_parallel_degree(n, int(c["tp"]), int(c["pp"]))  # type: ignore[call-overload]
            local = int(c["global_batch"]) // max(dp, 1)  # type: ignore[call-overload]
            rows.append({**c, "micro_batch": min(int(c["micro_batch"]), local), "num_gpus": n})  # type: ignore[call-overload]
        columns = ["model", "seq_len", "global_batch", "micro_batch", "gpu", "num_gpus", "tp",
                   "pp", "sharding", "recompute", "precision", "framework", "system"]  # fmt: skip
        frame = pd.DataFrame(rows)
        if "system" not in frame.columns:
            frame["system"] = ""
        return frame[columns]


@dataclass(frozen=True, slots=True)
class Sources:
    """Every entry of ``sources.yaml`` (file order) and the power anchor; ``path`` is the file."""

    path: str
    entries: tuple[SourceRules, ...]
    power_anchor: PowerAnchor
    frameworks: tuple[FrameworkPattern, ...]
    """How a row's framework text maps to a profile, first match first."""
    profiles: tuple[str, ...] = ()
    """The framework list the patterns' profiles were checked against (the caller's catalogue's
    profile keys, :func:`load_sources`)."""

    def for_source(self, source: str) -> SourceRules:
        """The entry whose ``match`` is part of ``source``; an empty one where none is."""
        found = [e for e in self.entries if e.match in source]
        if len(found) > 1:
            raise InputFileError(
                self.path,
                f"source {source!r} matches several entries ("
                + ", ".join(repr(e.match) for e in found)
                + "); allowed: at most one entry per source",
            )
        return found[0] if found else SourceRules()


def _behaviour(entry: Mapping[str, Any]) -> Behaviour:
    return Behaviour(
        when=dict(entry.get("when", {})),
        values=dict(entry.get("set", {})),
        from_text=dict(entry.get("set_if_text_has", {})),
        cite=str(entry.get("cite", "")),
    )


def _framework_patterns(
    entries: list[Mapping[str, Any]], path: Path, profiles: tuple[str, ...]
) -> tuple[FrameworkPattern, ...]:
    """The ``frameworks`` entries, each profile a framework profile and each pattern a regular
    expression (else :class:`~trainscale.errors.InputFileError` naming the entry)."""
    patterns = []
    for i, entry in enumerate(entries):
        unless = entry.get("unless", {})
        pattern = FrameworkPattern(
            pattern=str(entry["pattern"]), profile=str(entry["profile"]),
            describes=str(entry["describes"]), unless_pattern=str(unless.get("pattern", "")),
            unless_profile=str(unless.get("profile", "")),
        )  # fmt: skip
        for key, profile in (
            ("profile", pattern.profile),
            ("unless.profile", pattern.unless_profile),
        ):
            if profile and profile not in profiles:
                raise InputFileError(
                    path, f"frameworks[{i}].{key}: {profile!r} is not a framework profile; "
                    f"allowed: {', '.join(profiles)} (the profiles of the catalogue's "
                    "frameworks.yaml)",
                )  # fmt: skip
        for key, text in (("pattern", pattern.pattern), ("unless.pattern", pattern.unless_pattern)):
            try:
                re.compile(text)
            except re.error as error:
                raise InputFileError(
                    path, f"frameworks[{i}].{key}: {text!r} is not a regular expression ({error})"
                ) from error
        patterns.append(pattern)
    return tuple(patterns)


def load_sources(path: str | Path, *, frameworks: Sequence[str]) -> Sources:
    """Read and check ``sources.yaml`` (schema ``workflow/schemas/sources.schema.yaml``);
    ``frameworks``: the caller's framework list (``Catalogue.framework_keys``), which every
    profile the ``frameworks`` patterns name must be in.

    Raises :class:`~trainscale.errors.InputFileError` naming the file, line and key of a value
    the schema does not allow, a profile not in ``frameworks``, or two entries with the same
    ``match``.
    """
    path = Path(path)
    data = load_yaml(path)
    check_document(data, path, schema_file("sources"))
    entries = tuple(
        SourceRules(
            match=str(e["match"]),
            citation=str(e["citation"]),
            reason=str(e["reason"]),
            assumptions=str(e.get("assumptions", "")),
            rules=dict(e.get("rules", {})),
            behaviours=tuple(_behaviour(b) for b in e.get("behaviours", [])),
        )
        for e in data["sources"]
    )
    matches = [e.match for e in entries]
    if len(set(matches)) != len(matches):
        twice = sorted({m for m in matches if matches.count(m) > 1})
        raise InputFileError(path, f"sources: match {twice[0]!r} is given twice; allowed: once")
    anchor = data["power_anchor"]
    return Sources(
        path=str(path),
        entries=entries,
        frameworks=_framework_patterns(data["frameworks"], path, tuple(frameworks)),
        profiles=tuple(frameworks),
        power_anchor=PowerAnchor(
            source=str(anchor["source"]),
            url=str(anchor["url"]),
            table_or_figure=str(anchor["table_or_figure"]),
            drop_pct=float(anchor["drop_pct"]),
            from_gpus=int(anchor["from_gpus"]),
            to_gpus=int(anchor["to_gpus"]),
            reason=str(anchor["reason"]),
            configuration=dict(anchor["configuration"]),
        ),
    )
