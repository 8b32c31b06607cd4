"""What every workflow script (``workflow/scripts/*.py``) does around its one call.

A rule's script is thin: it reads the files its rule declares, calls one library function and
writes the rule's outputs. Around that call each script needs the same five things, written here
once:

- its standard error goes to the rule's ``log:`` file (line-buffered, so a killed job keeps what
  it printed);
- a :class:`~trainscale.errors.TrainscaleError` becomes ``error: <message>`` in the log and exit
  status 1, with no traceback (Snakemake then deletes the rule's outputs, so no partial file is
  left);
- the catalogue files and calibration are loaded from the paths the rule declares as named inputs
  (``**catalogue_inputs(...)`` in ``rules/common.smk``), never from the shipped defaults;
- each written file is named in the log;
- no declared output names a declared input (:func:`trainscale.io.outputs.check_outputs`),
  checked before the script reads anything.

Use::

    with rule_script(snakemake) as rule:
        frame = simulate(..., catalogue=rule.catalogue(), calibration=rule.calibration())
        rule.wrote(write_table(frame, snakemake.output.table))
"""

from __future__ import annotations

import atexit
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from trainscale.errors import TrainscaleError
from trainscale.io.outputs import check_outputs
from trainscale.published.measurements import PublishedData, load_published
from trainscale.sim.calibration import Calibration, load_calibration
from trainscale.sim.catalogue import (
    CATALOGUE_FILES,
    Catalogue,
    load_catalogue,
    load_catalogue_files,
)
from trainscale.study.inputs import StudyOutputInputs, load_study_output_inputs

__all__ = ["RuleScript", "rule_script"]


class _Snakemake(Protocol):
    """The part of Snakemake's ``snakemake`` script object used here."""

    input: Any
    output: Any
    log: Any


@dataclass(frozen=True)
class RuleScript:
    """The running rule: its declared inputs, loaded on request."""

    snakemake: _Snakemake
    #: Snakemake's console (the standard error before it went to the log).
    console: TextIO

    def report(self, message: str) -> None:
        """A line for the log and for Snakemake's console: a warning a user must see."""
        print(message, file=sys.stderr)
        print(message, file=self.console, flush=True)

    def catalogue(self) -> Catalogue:
        """All four catalogue files (:data:`~trainscale.sim.catalogue.CATALOGUE_FILES`), each
        from the path the rule declares under its name."""
        return load_catalogue({name: self.snakemake.input[name] for name in CATALOGUE_FILES})

    def catalogue_files(self, names: Iterable[str]) -> Mapping[str, object]:
        """Some catalogue files, each from its declared path (``load_catalogue_files``)."""
        return load_catalogue_files({name: self.snakemake.input[name] for name in names})

    def calibration(self) -> Calibration:
        """The calibration file the rule declares as input ``calibration``."""
        frameworks = load_catalogue_files({"frameworks": self.snakemake.input.frameworks})
        return load_calibration(
            self.snakemake.input.calibration, frameworks=tuple(frameworks["frameworks"])
        )

    def published(self, catalogue: Catalogue, *, key: str = "csv") -> PublishedData:
        """The published measurements: the CSV the rule declares as input ``key``, checked
        with ``catalogue`` and the per-source rules of its declared ``sources`` input."""
        return load_published(
            self.snakemake.input[key],
            hardware=catalogue.hardware,
            models=catalogue.models,
            frameworks=catalogue.framework_keys,
            sources=self.snakemake.input.sources,
        )

    def study_outputs(self) -> StudyOutputInputs:
        """A study's declared ``study`` file (checked against its ``schema`` input) with the
        ``hardware`` and ``models`` catalogues, for the per-study outputs."""
        return load_study_output_inputs(
            self.snakemake.input.study,
            schema=self.snakemake.input.schema,
            hardware=self.snakemake.input.hardware,
            models=self.snakemake.input.models,
        )

    def wrote(self, paths: Iterable[str | Path]) -> None:
        """Name each written file in the log."""
        for path in paths:
            print(f"wrote {path}", file=sys.stderr)


def _declared(files: Any) -> list[str]:
    """Every path of a rule's ``input`` or ``output`` (Snakemake's list, or an object with
    one attribute per name), flattened."""
    try:
        items = list(files)
    except TypeError:
        items = list(vars(files).values())
    paths: list[str] = []
    for item in items:
        if isinstance(item, list | tuple):
            paths += [str(path) for path in item]
        elif item is not None:
            paths.append(str(item))
    return paths


@contextmanager
def rule_script(
    snakemake: _Snakemake, *, error_note: str = "", echo_errors: bool = False
) -> Iterator[RuleScript]:
    """Send standard error to the rule's log; end a :class:`TrainscaleError` as ``error: ...``
    with exit status 1.

    The log stays open until the interpreter exits (anything printed after the ``with`` block
    still lands in it) and is closed then, after the real standard error is put back: left open,
    it gave ``ResourceWarning: unclosed file`` at exit.

    Parameters
    ----------
    snakemake
        The object Snakemake hands a rule's script (``snakemake.log[0]`` is the log file).
    error_note
        Written after ``error`` in the message, e.g. ``" (config ingest.strict: warnings are
        errors)"``.
    echo_errors
        Print the error on Snakemake's console too, not only in the log.

    Raises
    ------
    SystemExit
        Status 1 after a :class:`~trainscale.errors.TrainscaleError`, whose message is in the log.
    """
    console = sys.stderr
    log = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 (closed at exit, below)
    sys.stderr = log

    def close_log() -> None:
        sys.stderr = console
        log.close()

    atexit.register(close_log)
    rule = RuleScript(snakemake, console)
    try:
        check_outputs(
            {f"output {path}": path for path in _declared(getattr(snakemake, "output", ()))},
            _declared(snakemake.input),
            folders=True,
        )
        yield rule
    except TrainscaleError as error:
        message = f"error{error_note}: {error}"
        if echo_errors:
            rule.report(message)
        else:
            print(message, file=sys.stderr)
        sys.exit(1)
