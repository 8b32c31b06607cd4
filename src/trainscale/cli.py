"""The ``trainscale`` command line.

One module per command under ``trainscale.commands`` (Calculon's command registry): each defines
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. Only
:class:`~trainscale.errors.TrainscaleError` is caught here; it is printed as one clear message
and the exit status is 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from trainscale.errors import TrainscaleError
from trainscale.version import __version__

__all__ = ["COMMANDS", "main"]

#: Command modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "predict",
    "plan",
    "validate",
    "calibrate",
    "trace",
    "ingest",
    "bench",
    "catalogue",
)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainscale",
        description="Simulate, ingest and compare the scaling of distributed LLM training.",
    )
    parser.add_argument("--version", action="version", version=f"trainscale {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    seen: set[str] = set()
    for module_name in COMMANDS:
        module = importlib.import_module(f"trainscale.commands.{module_name}")
        if module.NAME in seen:
            raise RuntimeError(f"duplicate command name {module.NAME!r}")
        seen.add(module.NAME)
        command_parser = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Output piped into a reader that stops early (``trainscale predict … | head``) ends quietly
    with status 141 (128 + SIGPIPE), as the shell's own tools do, not with a traceback.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except TrainscaleError as error:
        print(f"trainscale {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 128 + 13


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush does not
    raise again (https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
