"""The simulator's parameter values and ``data/calibration.yaml``.

:mod:`trainscale.sim.parameters` defines the parameters (prior, bounds, unit, meaning); a
:class:`Calibration` holds one value of each: the shared ones as fields, the per-framework log
offsets as one mapping ``framework_offsets[framework][base]``, for the framework list it was
built with (:attr:`Calibration.frameworks`: the frameworks its values name, or the list the
caller passes). :func:`load_calibration` takes the caller's list (its catalogue's profile keys,
``Catalogue.framework_keys``), so a framework added to a catalogue's ``frameworks.yaml`` gets
its offsets (prior 0) with no code edit; no framework list is read at import. The file and the
fit keep the flat names ``<base>_offset_<framework>``: :class:`Calibration` takes and gives them
(``Calibration(**flat)``, :meth:`~Calibration.with_values`, :meth:`~Calibration.value`,
:meth:`~Calibration.as_dict`), and ``data/calibration.yaml`` stays one flat ``parameters`` block.
``trainscale calibrate`` (:mod:`trainscale.calibrate.fit`) fits the ``fitted`` ones to the published
measurements and writes them with their provenance; the others keep their sourced or estimated
value. ``calibration_id`` is a hash of the parameter values, so a
result row names exactly the parameters that produced it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType

import numpy as np
import yaml

from trainscale.errors import InputFileError, TrainscaleError, clip
from trainscale.io.atomic import write_text_atomic
from trainscale.io.yaml import load_yaml
from trainscale.paths import data_dir
from trainscale.sim.frameworks import load_frameworks
from trainscale.sim.interval_checks import interval_problems
from trainscale.sim.intervals import PredictionIntervals
from trainscale.sim.parameters import (
    FRAMEWORK_OFFSET_PRIOR_SD,
    OFFSET_BASES,
    SHARED_PARAMETERS,
    ParameterSpec,
    offset_name,
    parameters,
    split_offset_name,
)

__all__ = [
    "FRAMEWORK_OFFSET_PRIOR_SD",
    "MALFORMED",
    "OFFSET_BASES",
    "Calibration",
    "ParameterSpec",
    "load_calibration",
    "malformed_block",
    "named_frameworks",
    "parameters_at_bounds",
]


_SHARED_NAMES = frozenset(spec.name for spec in SHARED_PARAMETERS)
_MOE_SPECS = tuple(spec for spec in SHARED_PARAMETERS if spec.group == "moe")
_MOE_NAMES = frozenset(spec.name for spec in _MOE_SPECS)


@dataclass(frozen=True, slots=True, init=False)
class Calibration:
    """Values of all simulator parameters (units and meaning:
    :func:`~trainscale.sim.parameters.parameters`).

    Built from flat names, ``Calibration(gemm_size_scale=..., gemm_efficiency_offset_pytorch=...,
    ...)``, or with the offsets as one mapping (``framework_offsets=...``; flat names override
    its entries). Its framework list (:attr:`frameworks`) is ``frameworks`` where the caller
    passes one (its catalogue's profile keys), else the frameworks the offsets name, in the order
    given. Every shared parameter and every offset of :data:`OFFSET_BASES` × that list must be
    given; any other name is a :class:`TypeError`.
    """

    gemm_size_scale: float
    gemm_size_exponent: float
    attention_efficiency_scale: float
    elementwise_traffic_scale: float
    nvlink_efficiency: float
    nvls_efficiency: float
    nic_efficiency: float
    nccl_latency_scale: float
    congestion_per_doubling: float
    nccl_fill_chunks: float
    overlap_slowdown: float
    straggler_cv: float
    hbm_efficiency: float
    optimizer_bytes_per_param: float
    memory_overhead_gib: float
    memory_usable_fraction: float
    power_compute_frac: float
    power_memory_frac: float
    power_comm_frac: float
    fp8_gemm_scale: float
    moe_gemm_half_rows: float
    alltoall_efficiency: float
    expert_load_cv: float
    framework_offsets: Mapping[str, Mapping[str, float]] = field(hash=False)
    """Framework (:attr:`frameworks`, in that order) -> efficiency base (:data:`OFFSET_BASES`, in
    that order) -> log offset; ``exp(offset)`` multiplies the shared efficiency. Read-only."""
    intervals: PredictionIntervals | None = field(default=None, compare=False, repr=False)
    """The file's ``intervals`` block (:mod:`trainscale.sim.intervals`); not a parameter: it is
    left out of :meth:`as_dict` and of ``calibration_id``. None: predictions carry no interval."""
    moe_intervals: PredictionIntervals | None = field(default=None, compare=False, repr=False)
    """The ``intervals`` of the file's ``moe`` block: the 80 % intervals and coverage facts of
    mixture-of-experts rows, fitted on the held-out MoE rows (:mod:`trainscale.calibrate.moe`);
    not a parameter. None: MoE rows take :attr:`intervals`."""

    def __init__(
        self,
        *,
        frameworks: Sequence[str] | None = None,
        framework_offsets: Mapping[str, Mapping[str, float]] | None = None,
        intervals: PredictionIntervals | None = None,
        moe_intervals: PredictionIntervals | None = None,
        **values: float,
    ) -> None:
        named = [*(framework_offsets or {})]
        named += [split[1] for n in values if (split := split_offset_name(n)) is not None]
        listed = tuple(dict.fromkeys(named if frameworks is None else frameworks))
        offsets: dict[str, dict[str, float]] = {fw: {} for fw in listed}
        unknown = [fw for fw in framework_offsets or {} if fw not in offsets]
        for framework, by_base in (framework_offsets or {}).items():
            unknown += [offset_name(b, framework) for b in by_base if b not in OFFSET_BASES]
            offsets.get(framework, {}).update(by_base)
        for name, value in values.items():
            split = split_offset_name(name)
            if name in _SHARED_NAMES:
                object.__setattr__(self, name, value)
            elif split is not None and split[1] in offsets:
                offsets[split[1]][split[0]] = value
            else:
                unknown.append(name)
        missing = [n for n in _SHARED_NAMES if n not in values] + [
            offset_name(b, fw) for fw in listed for b in OFFSET_BASES if b not in offsets[fw]
        ]
        if unknown or missing:
            raise TypeError(
                f"Calibration: unknown parameter(s) {', '.join(sorted(unknown)) or '-'}; "
                f"missing {', '.join(sorted(missing)) or '-'} (the parameters: "
                "trainscale.sim.parameters.parameters(frameworks))"
            )
        ordered = {fw: MappingProxyType({b: offsets[fw][b] for b in OFFSET_BASES}) for fw in listed}
        object.__setattr__(self, "framework_offsets", MappingProxyType(ordered))
        object.__setattr__(self, "intervals", intervals)
        object.__setattr__(self, "moe_intervals", moe_intervals)

    def __reduce__(self) -> tuple[object, tuple[dict[str, float], PredictionIntervals | None,
                                                PredictionIntervals | None]]:  # fmt: skip
        """Pickled by flat names (a read-only mapping cannot be pickled): a worker process gets
        an equal calibration."""
        return _from_flat, (self.as_dict(), self.intervals, self.moe_intervals)

    @classmethod
    def defaults(cls, frameworks: Sequence[str]) -> Calibration:
        """The priors of the framework list ``frameworks`` (the caller's catalogue's profile
        keys): sourced or estimated values before any fit."""
        return cls(frameworks=frameworks, **{s.name: s.default for s in parameters(frameworks)})

    @property
    def frameworks(self) -> tuple[str, ...]:
        """The framework list of the offsets, in order: what :meth:`framework_factors` index."""
        return tuple(self.framework_offsets)

    def for_frameworks(self, frameworks: Sequence[str]) -> Calibration:
        """This calibration with the offsets of ``frameworks`` (the profile keys of the catalogue
        whose framework codes the simulator reads) first, in that order, and any others after
        them: equal values, the same ``calibration_id``; itself where already so.

        Raises
        ------
        trainscale.errors.TrainscaleError
            A framework of ``frameworks`` without offsets here, naming the ones there are.
        """
        if self.frameworks[: len(frameworks)] == tuple(frameworks):
            return self
        lacking = [fw for fw in frameworks if fw not in self.framework_offsets]
        if lacking:
            raise TrainscaleError(
                f"calibration {self.calibration_id} has no offsets for framework(s) "
                f"{', '.join(lacking)} of the catalogue (it has {', '.join(self.frameworks)}); "
                "load it with load_calibration(path, frameworks=catalogue.framework_keys) to give "
                "them their priors, or refit with trainscale calibrate"
            )
        return replace(self, frameworks=(*frameworks, *self.frameworks))

    def with_values(self, **values: float) -> Calibration:
        """Return a copy with some parameters (flat names, offsets included) changed."""
        return replace(self, **values)

    def value(self, name: str) -> float:
        """The value of parameter ``name`` (a flat name of
        :func:`~trainscale.sim.parameters.parameters`)."""
        split = split_offset_name(name)
        if name not in _SHARED_NAMES and split is not None:
            base, framework = split
            if framework in self.framework_offsets:
                return self.framework_offsets[framework][base]
        if name not in _SHARED_NAMES:
            raise KeyError(f"unknown calibration parameter {name!r}")
        return getattr(self, name)

    def framework_factors(self, base: str) -> np.ndarray:
        """``exp(offset)`` of efficiency ``base`` per framework, in the order of
        :attr:`frameworks` (:meth:`for_frameworks` puts them in a catalogue's order)."""
        return np.exp([by_base[base] for by_base in self.framework_offsets.values()])

    def as_dict(self) -> dict[str, float]:
        """Every parameter by flat name: the shared ones in field order, then the offsets base by
        base (frameworks in the order of :attr:`frameworks`)."""
        shared = {
            n: float(getattr(self, n)) for n in self.__dataclass_fields__ if n in _SHARED_NAMES
        }
        offsets = {
            offset_name(b, fw): float(self.framework_offsets[fw][b])
            for b in OFFSET_BASES
            for fw in self.framework_offsets
        }
        return shared | offsets

    @property
    def calibration_id(self) -> str:
        """Content hash of the parameter values (12 hex digits). The mixture-of-experts
        parameters (group ``moe``) enter it once one of them leaves its prior: they change no
        dense prediction, so a calibration whose MoE parameters sit at their priors keeps the id
        of the same dense parameters."""
        values = self.as_dict()
        if all(values[spec.name] == spec.default for spec in _MOE_SPECS):
            values = {k: v for k, v in values.items() if k not in _MOE_NAMES}
        payload = json.dumps(
            {k: float(f"{v:.12g}") for k, v in sorted(values.items())}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _from_flat(
    values: dict[str, float],
    intervals: PredictionIntervals | None,
    moe_intervals: PredictionIntervals | None = None,
) -> Calibration:
    """The calibration of flat ``values`` (what :meth:`Calibration.__reduce__` pickles)."""
    return Calibration(**values, intervals=intervals, moe_intervals=moe_intervals)


def _parse(path: Path, data: dict, frameworks: tuple[str, ...]) -> Calibration:
    given = data.get("parameters")
    if not isinstance(given, dict):
        raise InputFileError(path, "missing mapping 'parameters'")
    specs = {spec.name: spec for spec in parameters(frameworks)}
    values = {}
    for spec in specs.values():
        entry = given.get(spec.name)
        if entry is None:
            values[spec.name] = spec.default
            continue
        value = entry.get("value") if isinstance(entry, dict) else entry
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputFileError(path, f"parameters.{spec.name}.value: expected a number")
        if not spec.lower <= float(value) <= spec.upper:
            raise InputFileError(
                path,
                f"parameters.{spec.name}.value: {value} outside its bounds "
                f"[{spec.lower}, {spec.upper}]",
            )
        values[spec.name] = float(value)
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise InputFileError(
            path,
            f"parameters: unknown key(s) {', '.join(unknown)}; valid: {', '.join(specs)} (the "
            f"offsets of the framework list {', '.join(frameworks)})",
        )
    moe = data.get("moe")
    moe_block = moe.get("intervals") if isinstance(moe, dict) else None
    return Calibration(
        frameworks=frameworks, **values, intervals=_parse_intervals(path, data.get("intervals")),
        moe_intervals=_parse_intervals(path, moe_block, "moe.intervals"),
    )  # fmt: skip


def _parse_intervals(
    path: Path, block: object, name: str = "intervals"
) -> PredictionIntervals | None:
    if block is None:
        return None
    if not isinstance(block, dict):
        raise InputFileError(
            path, f"{name}: expected a mapping; regenerate it with trainscale calibrate"
        )
    problems = interval_problems(block)
    if problems:
        lines = [f"{name}.{key}: {clip(message)}" if name != "intervals" else
                 f"{key}: {clip(message)}" for key, message in problems[:20]]  # fmt: skip
        raise InputFileError(
            path,
            (lines[0] if len(lines) == 1 else "\n  ".join(["bad interval values:", *lines]))
            + "; regenerate the block with trainscale calibrate",
        )
    try:
        return PredictionIntervals.from_dict(block)  # type: ignore[arg-type]
    except MALFORMED as error:
        raise malformed_block(path, name, error) from None


#: What reading a malformed block of a calibration file raises (a key missing, a wrong type).
MALFORMED = (KeyError, TypeError, ValueError, AttributeError)


def malformed_block(path: Path, block: str, error: Exception) -> InputFileError:
    """The error for block ``block`` of the calibration file ``path`` that could not be read
    (``error``, one of :data:`MALFORMED`): it names the file, the block and the cause."""
    return InputFileError(
        path,
        f"{block}: malformed block ({type(error).__name__}: {error}); regenerate it with "
        "trainscale calibrate",
    )


def parameters_at_bounds(calibration: Calibration) -> list[str]:
    """Names of the fitted parameters whose value sits on one of their bounds (such a value is
    held by the bound, not by the data)."""
    values = calibration.as_dict()
    specs = parameters(calibration.frameworks)
    return [p.name for p in specs if p.fitted and values[p.name] in (p.lower, p.upper)]


@cache
def _load(path: Path, frameworks: tuple[str, ...]) -> Calibration:
    if not path.is_file():
        what = "does not exist" if not path.exists() else "is not a regular file"
        raise InputFileError(
            path,
            f"calibration file {what}; `trainscale calibrate -o {path}` writes one "
            "(Calibration.defaults(frameworks) gives the priors)",
        )
    return _parse(path, load_yaml(path), frameworks)


def load_calibration(
    path: str | Path | None = None, *, frameworks: Sequence[str] | None = None
) -> Calibration:
    """Load (and cache) a calibration file (default ``calibration.yaml`` of the data folder,
    :func:`trainscale.paths.data_dir`).

    Parameters
    ----------
    path
        The file; a path that is not a file is an error, never the priors
        (:meth:`Calibration.defaults` gives those).
    frameworks
        The framework list whose offsets the calibration holds: the profile keys of the
        caller's catalogue (``Catalogue.framework_keys``). An offset the file lacks stands at its
        prior (0), so a framework added to the catalogue runs before any refit; an offset of
        another framework is an error. None: the profile keys of the data folder's
        ``frameworks.yaml``, read now (a caller at the top: a command, a notebook).

    Raises
    ------
    trainscale.errors.InputFileError
        A file that is missing, unreadable, or holds an unknown key or a value outside its
        bounds (naming the file and the key).
    """
    if frameworks is None:
        frameworks = tuple(load_frameworks())
    file = Path(path) if path is not None else data_dir() / "calibration.yaml"
    return _load(file, tuple(frameworks))


def named_frameworks(path: str | Path) -> tuple[str, ...]:
    """The frameworks whose offsets the calibration file ``path`` names, in file order: the list
    to check a file on its own with, where no catalogue is at hand
    (``load_calibration(path, frameworks=named_frameworks(path))``)."""
    data = load_yaml(Path(path))
    given = data.get("parameters") if isinstance(data, dict) else None
    names = given if isinstance(given, dict) else {}
    return tuple(dict.fromkeys(s[1] for n in names if (s := split_offset_name(str(n))) is not None))


def dump_calibration(
    calibration: Calibration, path: Path, provenance: dict, stored: Mapping | None = None
) -> None:
    """Write a calibration file with each value, its bounds, meaning and the fit's provenance;
    ``stored``: blocks written after the ``intervals`` block (facts measured with this
    calibration, :mod:`trainscale.calibrate.stored`)."""
    entries = {}
    at_priors = all(calibration.value(spec.name) == spec.default for spec in _MOE_SPECS)
    for spec in parameters(calibration.frameworks):
        if at_priors and spec.name in _MOE_NAMES:
            continue  # as in calibration_id: written once fitted (missing ones read as priors)
        entries[spec.name] = {
            "value": float(f"{calibration.value(spec.name):.6g}"),
            "lower": spec.lower,
            "upper": spec.upper,
            "prior": spec.default,
            "unit": spec.unit,
            "fitted": spec.fitted,
            "description": spec.description,
        }
    document = {
        "calibration_id": calibration.calibration_id,
        **provenance,
        "parameters": entries,
    }
    if calibration.intervals is not None:
        document["intervals"] = calibration.intervals.as_dict()
    document.update(stored or {})
    text = yaml.safe_dump(document, sort_keys=False, width=100, allow_unicode=False)
    write_text_atomic(path, text)
