"""The options of ``trainscale predict``, and the one configuration they describe.

A table in (``CONFIGS -o OUT``, :func:`add_table_options`) or one configuration
(:func:`add_configuration_options`: the job, its plan, its system). Each one-configuration default
is written into its help (:data:`DEFAULTS`): the options' argparse defaults are None, so that
``--paper-setup`` can tell an option given from one left out. :func:`single_configuration` turns
the options into a one-row configuration table. Numbers are read as strictly as a table's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from trainscale.commands.output import add_output_option
from trainscale.errors import TrainscaleError
from trainscale.io.numbers import option_float, option_int
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    FINETUNE_MODES,
    MOE_DISPATCHERS,
    MOE_ROUTINGS,
    PRECISIONS,
    RECOMPUTE_MODES,
    SHARDINGS,
)
from trainscale.schema.bounds import MAX_GPUS
from trainscale.schema.choices import DEFAULT_FRAMEWORK
from trainscale.sim.degrees import model_parallel_degree
from trainscale.sim.inputs import REQUIRED_COLUMNS, SHAPE_COLUMNS

__all__ = [
    "DEFAULTS",
    "PredictHelpFormatter",
    "add_configuration_options",
    "add_table_options",
    "single_configuration",
    "table_columns_help",
    "table_defaults",
]

#: Defaults of the one-configuration options (shown in ``--help``); ``--global-batch`` has none:
#: without it the batch is dp × micro-batch (see its help).
DEFAULTS: dict[str, object] = {
    "seq_len": 4096, "micro_batch": 1, "tp": 1, "pp": 1, "cp": 1, "vpp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip


class PredictHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description keeps its line breaks; help lines never break inside a hyphenated word
    (``micro-batch``, ``fernandez-h100``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _default(name: str) -> str:
    return f" (default: {DEFAULTS[name]})"


def table_columns_help(width: int = 78) -> str:
    """The epilog of ``predict --help``: the columns a configuration table takes."""
    import textwrap

    optional = [
        c.name for c in CONFIGURATION_COLUMNS
        if c.name not in (*REQUIRED_COLUMNS, *SHAPE_COLUMNS, "model")
    ]  # fmt: skip
    required = [name for name in REQUIRED_COLUMNS if name not in (*DEFAULTS, "global_batch")]
    defaults = ", ".join(
        f"{name} {value}" for name, value in DEFAULTS.items() if name in REQUIRED_COLUMNS
    )
    paragraphs = (
        f"Table columns (CONFIGS): {', '.join(required)} are required; the model as "
        f"model (a catalogue key) or its shape ({', '.join(SHAPE_COLUMNS)}; given with model, "
        "they override its values); a column left out takes the option's default for every "
        f"row, as one configuration does ({defaults}; global_batch dp x micro_batch), echoed "
        f"in the output; optional, each empty or absent meaning the default the output echoes: "
        f"{', '.join(optional)}.",
        "Names and units are the options' (seq_len = --seq-len, power_limit_w in W). Choice "
        "values (sharding, recompute, precision, mlp, framework, ...) are read "
        "case-insensitively and written back as the choice (FSDP -> fsdp); catalogue keys "
        "(model, gpu, system) are exact, and a near miss gets a 'did you mean'. A column close "
        "to one of these names is warned about; other columns are carried through untouched. "
        "Every column with its range: docs/bad-input.md.",
    )
    return "\n\n".join(textwrap.fill(p, width, break_on_hyphens=False) for p in paragraphs)


def add_table_options(parser: argparse.ArgumentParser) -> None:
    """The table form: ``CONFIGS``, ``-o``, ``--calibration``, ``--skip-invalid``."""
    parser.add_argument("configs", nargs="?", type=Path, help="configuration table (.csv/.parquet)")
    add_output_option(parser, "result table (.csv/.parquet)")
    parser.add_argument(
        "--calibration",
        type=Path,
        help="calibration file to predict with (default data/calibration.yaml), e.g. one "
        "written by trainscale calibrate --measurements",
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="predict the valid rows; write rejected rows with their reason to OUT.rejects.csv",
    )
    bill = parser.add_argument_group("time, energy and cost to train (either form)")
    bill.add_argument(
        "--train-tokens",
        metavar="N",
        help="tokens to train, e.g. 1T, 300B, 2.5e12: adds days, GPU-hours and MWh (GPU board, "
        "node, facility) with 80 %% intervals",
    )
    bill.add_argument(
        "--usd-per-gpu-hour",
        type=option_float,
        metavar="USD",
        help="price of a GPU-hour: adds cost",
    )
    bill.add_argument(
        "--power-caps",
        nargs="?",
        const="default",
        metavar="W,W,...",
        help="one configuration: predict it at each GPU power cap (default: every 25 W from "
        "above idle to the TDP) and name the cap with the lowest node and facility energy per "
        "token",
    )
    bill.add_argument(
        "--pue",
        type=option_float,
        help="facility PUE for rows without a pue column value (default: the catalogue's, 1.56)",
    )


def add_configuration_options(parser: argparse.ArgumentParser) -> None:
    """The one-configuration form, one argument group: the job, its plan, its system."""
    one = parser.add_argument_group("one configuration (instead of a table)")
    _add_job_options(one)
    _add_plan_options(one)
    _add_system_options(one)


def _add_job_options(one: argparse._ArgumentGroup) -> None:
    """Model, GPU, GPU count, and ``--paper-setup``."""
    one.add_argument("--model", help="model catalogue key, e.g. llama2-7b")
    one.add_argument("--gpu", help="GPU catalogue key, e.g. h100-sxm-80gb")
    one.add_argument("--num-gpus", type=option_int, help=f"GPUs in the job, 1 to {MAX_GPUS:,}")
    one.add_argument(
        "--paper-setup",
        action="store_true",
        help="fill every option not given with the paper setup that the claims table uses "
        "(src/trainscale/paper/setup.py): sequence 4,096, global batch 2,048 sequences, "
        "micro-batch 2 (or the local batch when smaller), fsdp, no recomputation, bf16, "
        "framework pytorch, and on H100 the study's cluster (system fernandez-h100)",
    )


def _add_plan_options(one: argparse._ArgumentGroup) -> None:
    """Batch, parallel degrees, sharding, recomputation and precision."""
    one.add_argument("--seq-len", type=option_int, help="tokens per sequence" + _default("seq_len"))
    one.add_argument(
        "--global-batch",
        type=option_int,
        help="sequences per optimizer step (default: dp x micro-batch, dp = num_gpus / (tp x pp "
        "x cp): one micro-batch per step, no gradient accumulation, so with pp > 1 the "
        "pipeline bubble is large and a warning names a batch that shrinks it)",
    )
    one.add_argument(
        "--micro-batch", type=option_int, help="sequences per micro-batch" + _default("micro_batch")
    )
    one.add_argument("--tp", type=option_int, help="tensor-parallel degree" + _default("tp"))
    one.add_argument("--pp", type=option_int, help="pipeline-parallel degree" + _default("pp"))
    one.add_argument("--cp", type=option_int, help="context-parallel degree" + _default("cp"))
    one.add_argument(
        "--vpp", type=option_int, help="virtual pipeline stages per GPU" + _default("vpp")
    )
    one.add_argument(
        "--sharding", choices=SHARDINGS, help="data-parallel sharding" + _default("sharding")
    )
    one.add_argument(
        "--recompute",
        choices=RECOMPUTE_MODES,
        help="activation recomputation" + _default("recompute"),
    )
    one.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="bf16 mixed precision (fp16 on V100, which has no bf16), or fp8 (H100 and later)"
        + _default("precision"),
    )
    one.add_argument(
        "--finetune",
        choices=FINETUNE_MODES,
        help="none (pretraining), full (fine-tune every weight: the same work) or lora (frozen "
        "base weights, rank --lora-rank adapters on the attention projections; default none)",
    )
    one.add_argument("--lora-rank", type=option_int, help="rank of the LoRA adapters (default 16)")
    _add_expert_options(one)


def _add_expert_options(one: argparse._ArgumentGroup) -> None:
    """Expert parallelism and routing of a mixture-of-experts model."""
    one.add_argument(
        "--ep", type=option_int, help="expert-parallel degree (mixture-of-experts models; "
        "default 1)",
    )  # fmt: skip
    one.add_argument(
        "--etp", type=option_int, help="expert tensor-parallel degree (default: tp, as "
        "Megatron-Core's --expert-tensor-parallel-size)",
    )  # fmt: skip
    one.add_argument(
        "--moe-routing", choices=MOE_ROUTINGS, help="dropless (a trained router; the busiest "
        "expert-parallel rank sets the pace; default), balanced (forced uniform) or capacity "
        "(--capacity-factor per expert, tokens above it dropped, experts padded to it)",
    )  # fmt: skip
    one.add_argument(
        "--capacity-factor", type=option_float, help="tokens an expert may take over its "
        "uniform share, with --moe-routing capacity (default 1)",
    )  # fmt: skip
    one.add_argument(
        "--moe-dispatcher", choices=MOE_DISPATCHERS, help="how tokens reach their experts: "
        "alltoall, allgather (Megatron-LM --moe-token-dispatcher-type) or deepep (default: "
        "the framework profile's)",
    )  # fmt: skip


def _add_system_options(one: argparse._ArgumentGroup) -> None:
    """Node size, NIC bandwidth, power limit, catalogue system and framework."""
    one.add_argument(
        "--gpus-per-node",
        type=option_int,
        help="GPUs per node (default: the GPU's catalogue system)",
    )
    one.add_argument(
        "--nic-gbit-per-s-per-gpu",
        type=option_float,
        help="scale-out NIC bandwidth per GPU, Gb/s (default: the GPU's catalogue system)",
    )
    one.add_argument(
        "--power-limit-w",
        type=option_float,
        help="GPU board power limit, W (nvidia-smi -pl); below the TDP the clock drops during "
        "GEMM-bound compute (default: the GPU's TDP, no limit)",
    )
    one.add_argument(
        "--system",
        help="catalogue system (data/hardware.yaml), e.g. fernandez-h100 (default: the GPU's)",
    )
    one.add_argument(
        "--framework",
        help=f"software stack profile: a profile key of the data folder's frameworks.yaml, "
        f"checked against it when the catalogue is read (default: {DEFAULT_FRAMEWORK})",
    )


def _paper_setup(args: argparse.Namespace) -> dict[str, object]:
    """The paper setup's value of every one-configuration option (``--paper-setup``)."""
    from trainscale.paper.values import (
        PAPER_FRAMEWORK,
        PAPER_GLOBAL_BATCH,
        PAPER_MICRO_BATCH,
        PAPER_SEQ_LEN,
        PAPER_SYSTEMS,
    )

    degree = model_parallel_degree(args.tp or 1, args.pp or 1, args.cp or 1)
    global_batch = args.global_batch or PAPER_GLOBAL_BATCH
    local = global_batch // max(args.num_gpus // degree, 1)
    setup: dict[str, object] = {
        "seq_len": PAPER_SEQ_LEN, "global_batch": global_batch,
        "micro_batch": max(1, min(PAPER_MICRO_BATCH, local)), "sharding": "fsdp",
        "recompute": "none", "precision": "bf16", "framework": PAPER_FRAMEWORK,
    }  # fmt: skip
    if args.gpu in PAPER_SYSTEMS:
        setup["system"] = PAPER_SYSTEMS[args.gpu]
    return setup


def _one_step_batch(num_gpus: object, micro_batch: object, tp: object, pp: object,
                    cp: object) -> int | None:  # fmt: skip
    """dp x micro-batch (one micro-batch per step, dp = num_gpus / (tp x pp x cp)), or None
    where a value is not a whole number (the validation names it)."""
    try:
        values = [int(v) for v in (num_gpus, micro_batch, tp, pp, cp)]  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return values[0] * values[1] // max(model_parallel_degree(*values[2:]), 1)


def table_defaults(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``table`` with every required column of :data:`DEFAULTS` it leaves out set to that
    default, and ``global_batch``, when left out, to one micro-batch per step (dp x micro-batch,
    as without ``--global-batch``); and the names of the columns so added. (``cp`` and ``vpp``
    are optional columns: absent, the simulator takes and writes their default.)"""
    filled = {
        name: value
        for name, value in DEFAULTS.items()
        if name in REQUIRED_COLUMNS and name not in table.columns
    }
    table = table.assign(**filled)
    added = list(filled)
    if "global_batch" not in table.columns and "num_gpus" in table.columns:
        columns = [table[name] for name in ("num_gpus", "micro_batch", "tp", "pp")]
        cp = table["cp"] if "cp" in table.columns else pd.Series(1, index=table.index)
        batch = [_one_step_batch(*row) for row in zip(*columns, cp.fillna(1), strict=True)]
        table = table.assign(global_batch=pd.array(batch, dtype="Int64"))
        added.append("global_batch")
    return table, added


def single_configuration(args: argparse.Namespace) -> pd.DataFrame:
    """The one-row configuration table of the one-configuration options: the options given,
    then the paper setup with ``--paper-setup``, then :data:`DEFAULTS`; without
    ``--global-batch``, one micro-batch per step.

    Raises
    ------
    TrainscaleError
        ``--model``, ``--gpu`` or ``--num-gpus`` is missing.
    """
    required = (("--model", args.model), ("--gpu", args.gpu), ("--num-gpus", args.num_gpus))
    missing = [flag for flag, value in required if value is None]
    if missing:
        raise TrainscaleError(
            f"give a configuration table, or at least {', '.join(missing)} for one configuration"
        )
    given = {name: value for name, value in vars(args).items() if value is not None}
    values: dict = {**DEFAULTS, **(_paper_setup(args) if args.paper_setup else {}), **given}
    if "global_batch" not in values:  # one micro-batch per step
        degree = max(model_parallel_degree(values["tp"], values["pp"], values["cp"]), 1)
        values["global_batch"] = args.num_gpus * values["micro_batch"] // degree
    columns = ("model", "gpu", "num_gpus", "seq_len", "global_batch", *DEFAULTS)
    row = {name: values[name] for name in dict.fromkeys(columns)}
    row |= {
        name: values[name]
        for name in (
            "gpus_per_node",
            "nic_gbit_per_s_per_gpu",
            "power_limit_w",
            "system",
            "framework",
            "finetune",
            "lora_rank",
            "ep",
            "etp",
            "moe_routing",
            "capacity_factor",
            "moe_dispatcher",
        )
        if values.get(name)
    }
    return pd.DataFrame([row])
