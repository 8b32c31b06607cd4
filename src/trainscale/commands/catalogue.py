"""``trainscale list gpus|models|systems|frameworks``: what the catalogues hold.

One row per catalogue entry with its key (what a configuration table, a study or ``predict``
names), its readable label and the facts a user picks it by. The tables are built from the
catalogue the command loads (the shipped one, or ``--catalogue DIR``), never from a list written
here, so a GPU, model, system or framework added to ``data/*.yaml`` is listed with no code edit.

Columns, by kind (units in the names):

- ``gpus``: ``gpu``, ``label``, ``bf16_tflops`` (dense BF16 peak, 10^12 FLOP/s), ``fp8_tflops``
  (empty where the GPU has no FP8), ``hbm_gib``, ``hbm_tb_per_s``, ``nvlink_gb_per_s`` (per GPU
  per direction), ``tdp_w``, ``default_system``;
- ``models``: ``model``, ``label``, ``params_b`` (10^9 parameters, total),
  ``active_params_b`` (10^9 parameters one token passes through; the total for a dense model),
  ``experts`` (routed experts per MoE block; empty for a dense model), ``top_k`` (routed
  experts per token), ``gflop_per_token_4k`` (model FLOPs per trained token at 4,096 tokens per
  sequence, 10^9: six per active matmul weight plus attention counted without the causal mask,
  trainscale's MFU convention, :func:`trainscale.sim.model.counts.model_flops_per_token`),
  ``layers``, ``hidden``, ``heads``, ``kv_heads``, ``ffn`` (empty for an MoE
  model without dense blocks), ``vocab``, ``mlp``;
- ``systems``: ``system``, ``gpu``, ``gpus_per_node``, ``nic_gbit_per_s_per_gpu``, ``fabric``,
  ``nvswitch``, ``description``;
- ``frameworks``: ``framework``, ``aliases``, ``attention_kernel``, ``fp8_recipe``,
  ``cp_comm_type``, ``description``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from trainscale.names import gpu_label, model_label
from trainscale.sim.catalogue import Catalogue, load_catalogue
from trainscale.sim.model.counts import model_flops_per_token

__all__ = ["HELP", "KINDS", "NAME", "add_arguments", "catalogue_table", "run"]

NAME = "list"
HELP = "List the catalogues' GPUs, models, systems or frameworks (keys, labels, key facts)."


def _attributes(entry: object, *names: str) -> dict[str, object]:
    """Columns that are an entry's attributes of the same name, in the order given."""
    return {name: getattr(entry, name) for name in names}


def _gpus(catalogue: Catalogue) -> pd.DataFrame:
    hardware = catalogue.hardware
    rows = [
        {
            "gpu": key,
            "label": gpu_label(key, hardware),
            "bf16_tflops": gpu.bf16_flops_per_s / 1e12,
            "fp8_tflops": None if gpu.fp8_flops_per_s is None else gpu.fp8_flops_per_s / 1e12,
            "hbm_gib": gpu.hbm_bytes / 2**30,
            "hbm_tb_per_s": gpu.hbm_bytes_per_s / 1e12,
            "nvlink_gb_per_s": gpu.nvlink_bytes_per_s / 1e9,
            "tdp_w": gpu.tdp_w,
            "default_system": hardware.default_system.get(key, ""),
        }
        for key, gpu in sorted(hardware.gpus.items())
    ]
    return pd.DataFrame(rows)


#: Tokens per sequence of the listed FLOPs per token.
_FLOP_SEQ_LEN = 4096


def _models(catalogue: Catalogue) -> pd.DataFrame:
    rows = [
        {
            "model": key,
            "label": model_label(key, catalogue.models),
            "params_b": shape.params / 1e9,
            "active_params_b": shape.active_params / 1e9,
            "experts": None if shape.moe is None else shape.moe.num_experts,
            "top_k": None if shape.moe is None else shape.moe.experts_per_token,
            "gflop_per_token_4k": model_flops_per_token(shape, _FLOP_SEQ_LEN) / 1e9,
        }
        | _attributes(shape, "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp")
        for key, shape in sorted(catalogue.models.items())
    ]
    table = pd.DataFrame(rows)
    # An MoE model without dense blocks has no dense ffn: empty, not 0.
    table["ffn"] = table["ffn"].where(table["ffn"] > 0)
    return table.astype({"experts": "Int64", "top_k": "Int64", "ffn": "Int64"})


def _systems(catalogue: Catalogue) -> pd.DataFrame:
    rows = [
        {"system": key}
        | _attributes(system, "gpu", "gpus_per_node")
        | {"nic_gbit_per_s_per_gpu": system.nic_bytes_per_s_per_gpu * 8 / 1e9}
        | _attributes(system, "fabric", "nvswitch", "description")
        for key, system in sorted(catalogue.hardware.systems.items())
    ]
    return pd.DataFrame(rows)


def _frameworks(catalogue: Catalogue) -> pd.DataFrame:
    rows = [
        {"framework": key, "aliases": ", ".join(profile.aliases)}
        | _attributes(profile, "attention_kernel", "fp8_recipe", "cp_comm_type", "description")
        for key, profile in sorted(catalogue.frameworks.items())
    ]
    return pd.DataFrame(rows)


#: Kind → its table builder, in the order ``--help`` lists them.
KINDS: dict[str, Callable[[Catalogue], pd.DataFrame]] = {
    "gpus": _gpus,
    "models": _models,
    "systems": _systems,
    "frameworks": _frameworks,
}


def catalogue_table(catalogue: Catalogue, kind: str) -> pd.DataFrame:
    """The catalogue's entries of one kind (one of :data:`KINDS`), one row each, sorted by key;
    columns as in the module docstring."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    return KINDS[kind](catalogue)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the command's arguments to ``parser``."""
    parser.add_argument("kind", choices=tuple(KINDS), help="what to list")
    parser.add_argument(
        "--catalogue",
        metavar="DIR",
        type=Path,
        help="a folder with hardware.yaml, models.yaml, frameworks.yaml and nccl.yaml "
        "(default: the shipped catalogues)",
    )
    parser.add_argument(
        "--csv", action="store_true", help="print CSV instead of an aligned text table"
    )


#: Longest description the text table prints (``--csv`` prints it whole).
_DESCRIPTION_CHARS = 60


def _text(table: pd.DataFrame) -> str:
    shown = table.copy()
    if "description" in shown:
        shown["description"] = shown["description"].map(
            lambda text: text if len(text) <= _DESCRIPTION_CHARS
            else text[: _DESCRIPTION_CHARS - 1] + "…"
        )  # fmt: skip
    for column in shown.columns:
        if isinstance(shown[column].dtype, pd.Int64Dtype):
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else str(v))
        elif pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:,.4g}")
    return shown.to_string(index=False, na_rep="")


def run(args: argparse.Namespace) -> int:
    """Print the table; exit status 0."""
    catalogue = load_catalogue(args.catalogue)
    table = catalogue_table(catalogue, args.kind)
    if args.csv:
        print(table.to_csv(index=False), end="")
    else:
        print(_text(table))
    return 0
