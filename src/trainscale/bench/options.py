"""The ``trainscale bench`` options, built from :class:`~trainscale.bench.config.BenchConfig`'s
fields, and the configuration of parsed options.

Each field carries its option in its metadata (:func:`trainscale.bench.config.option`): the
argument group, the help, the flag when it is not the field's name. The value's type, its
choices (a ``Literal``), its default and whether it is required (no default) come from the field
itself, so ``--help``, the parser and the dataclass cannot disagree. The shape field is one option
per :data:`~trainscale.bench.config.SHAPE_FIELDS` entry (:data:`SHAPE_HELP`): a catalogue model's
values, each overridable, or every one given.

Torch-free: ``trainscale --help`` and the Snakemake bench sweep (:mod:`trainscale.bench.sweep`)
build this parser without PyTorch.
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, Field, fields
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, get_args, get_origin, get_type_hints

from trainscale.bench.config import SHAPE_FIELDS, BenchConfig
from trainscale.errors import TrainscaleError
from trainscale.io.numbers import option_float, option_int
from trainscale.sim.model.params import TransformerShape

__all__ = ["GROUPS", "SHAPE_HELP", "add_arguments", "build_config", "model_shape"]

#: Argument groups, in the order ``--help`` lists them: metadata key → title.
GROUPS: dict[str, str] = {
    "model": "model (a catalogue model, optionally with fields overridden, or every shape field)",
    "batch": "batch and steps",
    "parallelism": "parallelism and device",
    "output": "instrumentation and output",
}
#: Help of the shape options, one per :data:`~trainscale.bench.config.SHAPE_FIELDS` entry.
SHAPE_HELP: dict[str, str] = {
    "layers": "transformer blocks (e.g. cut a catalogue model)",
    "hidden": "model width",
    "heads": "query heads",
    "kv_heads": "key/value heads (default: --heads)",
    "ffn": "SwiGLU inner size",
    "vocab": "vocabulary size",
}


def _flag(name: str) -> str:
    """``--kv-heads`` of ``kv_heads``."""
    return "--" + name.replace("_", "-")


def _dest(field: Field[Any]) -> str:
    """The parsed value's name of a field's option (``warmup`` for ``warmup_steps``)."""
    return (field.metadata["option"]["flag"] or field.name).replace("-", "_")


def _value_type(hint: Any) -> Any:
    """The type of a field's value, without ``| None``."""
    if isinstance(hint, UnionType):
        return next(arg for arg in get_args(hint) if arg is not NoneType)
    return hint


def _argument(field: Field[Any], hint: Any) -> dict[str, Any]:
    """``add_argument`` keywords of a field: help, type or choices, metavar, default/required."""
    spec = field.metadata["option"]
    kwargs: dict[str, Any] = {"help": spec["help"]}
    kind = _value_type(hint)
    if get_origin(kind) is Literal:
        kwargs["choices"] = get_args(kind)
    elif kind is not str:
        # numbers read as strictly as table values (no nan, inf, separators or units)
        kwargs["type"] = {int: option_int, float: option_float}.get(kind, kind)
    if spec["metavar"]:
        kwargs["metavar"] = spec["metavar"]
    if field.default is MISSING and not spec["derived"]:
        kwargs["required"] = True
    elif not spec["derived"]:
        kwargs["default"] = field.default
    return kwargs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``trainscale bench`` options to ``parser``: one per :class:`BenchConfig` field
    (the shape: one per shape field), in argument groups (:data:`GROUPS`)."""
    hints = get_type_hints(BenchConfig)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for field in fields(BenchConfig):
        key = field.metadata["option"]["group"]
        if key not in groups:
            groups[key] = parser.add_argument_group(GROUPS[key])
        if field.name == "shape":
            for name in SHAPE_FIELDS:
                groups[key].add_argument(_flag(name), type=option_int, help=SHAPE_HELP[name])
        else:
            groups[key].add_argument(
                _flag(field.metadata["option"]["flag"] or field.name),
                **_argument(field, hints[field.name]),
            )


def model_shape(args: argparse.Namespace) -> TransformerShape:
    """The model shape: catalogue values, overridden by the explicit options.

    Raises
    ------
    TrainscaleError
        ``--model`` is not in the catalogue, not dense (mixture of experts, latent attention,
        ``head_dim``) or not a SwiGLU model, or, without it, a shape
        option is missing (``--kv-heads`` defaults to ``--heads``).
    """
    from trainscale.sim.model.shape import load_models

    shape: dict[str, int] = {}
    if args.model:
        models = load_models()
        if args.model not in models:
            raise TrainscaleError(
                f"bench: unknown --model {args.model!r}; catalogue: {', '.join(sorted(models))}"
            )
        entry = models[args.model]
        if not entry.plain:
            raise TrainscaleError(
                f"bench: {args.model} is not a dense decoder with hidden / heads-wide heads "
                "(mixture of experts, latent attention or head_dim); the harness builds dense "
                "Llama-style SwiGLU decoders only"
            )
        if entry.mlp != "swiglu":
            raise TrainscaleError(
                f"bench: {args.model} has a {entry.mlp} MLP; the harness builds Llama-style "
                "SwiGLU decoders only"
            )
        shape = {name: getattr(entry, name) for name in SHAPE_FIELDS}
    shape |= {name: getattr(args, name) for name in SHAPE_FIELDS if getattr(args, name) is not None}
    if "kv_heads" not in shape and "heads" in shape:
        shape["kv_heads"] = shape["heads"]
    missing = [_flag(name) for name in SHAPE_FIELDS if name not in shape]
    if missing:
        raise TrainscaleError(
            f"bench: give --model or the model shape; missing {', '.join(missing)}"
        )
    return TransformerShape(**shape, swiglu=True)


def build_config(args: argparse.Namespace) -> BenchConfig:
    """The :class:`BenchConfig` of parsed options (no torch). The derived options: the backend
    of the device (``nccl`` on CUDA, ``gloo`` on the CPU), the run id of the folder's name, a
    description of the run.

    Raises
    ------
    TrainscaleError
        The shape (:func:`model_shape`) or the configuration (:class:`BenchConfig`) is invalid.
    """
    shape = model_shape(args)
    values = {f.name: getattr(args, _dest(f)) for f in fields(BenchConfig) if f.name != "shape"}
    device = values["device"]
    backend = values["backend"] or ("nccl" if device == "cuda" else "gloo")
    out = Path(values["out_dir"])
    description = values["description"] or (
        f"trainscale bench: {shape.layers}-layer Llama-style decoder (hidden "
        f"{shape.hidden}{', from ' + args.model if args.model else ''}), {values['sharding']} "
        f"tp {values['tp']}, seq {values['seq_len']}, on {device} with {backend}"
    )
    values |= {
        "backend": backend,
        "out_dir": out,
        "run_id": values["run_id"] or out.resolve().name,
        "description": description,
    }
    return BenchConfig(shape=shape, **values)
