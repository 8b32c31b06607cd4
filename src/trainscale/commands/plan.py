"""``trainscale plan``: the best parallel plan per GPU and GPU count, in one command.

It searches tp, pp, vpp, cp, sharding, recomputation and micro-batch (:data:`DEFAULT_SEARCH`,
each overridable) under memory for a model, one or more GPUs, GPU counts and a global batch in
tokens (``4M``) or sequences, through the study machinery (:mod:`trainscale.commands.plan_search`),
and prints per GPU and GPU count the winning plan with its 80 % interval, the runner-up and its
margin and the memory headroom, then each GPU's knee (:mod:`trainscale.fits.knee`). ``-o`` writes
the study points table (:mod:`trainscale.tables.study_points`: the same columns, the same code).
"""

from __future__ import annotations

import argparse
import re
import sys

import pandas as pd

from trainscale.commands.output import add_output_option
from trainscale.io.numbers import option_int
from trainscale.study.plan import DEFAULT_SEARCH

NAME = "plan"
HELP = "search the best parallel plan per GPU and GPU count (tp, pp, vpp, cp, sharding, ...)"

__all__ = ["HELP", "NAME", "add_arguments", "format_plan", "run"]


def _values(text: str) -> int | str:
    """A searched value: a whole number read as strictly as any numeric option
    (:func:`~trainscale.io.numbers.option_int`), or a word (a sharding, a recompute mode,
    ``auto``); anything that looks like a number but is not a plain one (``nan``, ``1_000``,
    ``2.5``) is a usage error."""
    word = re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", text)
    if word and text.lower() not in ("nan", "inf", "infinity"):
        return text
    return option_int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model key (trainscale list models)")
    parser.add_argument("--gpu", nargs="+", required=True, help="GPU catalogue key(s)")
    parser.add_argument("--num-gpus", nargs="+", type=option_int, required=True, help="GPU counts")
    batch = parser.add_mutually_exclusive_group(required=True)
    batch.add_argument(
        "--global-batch-tokens", help="global batch in tokens; K, M, G are powers of 1024 (4M)"
    )
    batch.add_argument("--global-batch", type=option_int, help="global batch in sequences")
    parser.add_argument(
        "--seq-len", type=option_int, default=8192, help="tokens per sequence (8192)"
    )
    parser.add_argument("--framework", default="megatron", help="framework profile (megatron)")
    parser.add_argument("--precision", default="bf16", help="bf16 (default) or fp8")
    for key, values in DEFAULT_SEARCH.items():
        parser.add_argument(
            f"--{key.replace('_', '-')}", nargs="+", type=_values, metavar="V",
            help=f"{key} values searched (default {' '.join(str(v) for v in values)})",
        )  # fmt: skip
    parser.add_argument("--calibration", help="calibration file (default: the shipped one)")
    add_output_option(parser, "the study points table (.csv or .parquet)")


def _number(value: float, digits: int = 0) -> str:
    return "—" if pd.isna(value) else f"{value:,.{digits}f}"


def _short(plan: str) -> str:
    """A plan's text without its framework (the header names it)."""
    return plan.split(" · ", 1)[1] if " · " in plan else plan


def format_plan(points: pd.DataFrame, knees: pd.DataFrame, x: str = "num_gpus") -> str:
    """The printed table: per GPU and GPU count the winner, its interval, runner-up, headroom;
    then one knee line per GPU."""
    lines = []
    for series, rows in points.groupby("series", sort=False):
        lines.append(f"\n{series}")
        lines.append(
            f"  {'GPUs':>6}  {'plan':<44} {'tokens/s/GPU':>12} {'80 % interval':>17} "
            f"{'MFU %':>6} {'headroom GiB':>12}  runner-up (winner's margin)"
        )
        for r in rows.itertuples(index=False):
            row = r._asdict()
            gpus = int(row[x])
            per_gpu = row["tokens_per_s"] / gpus
            low, high = row["tokens_per_s_lo"] / gpus, row["tokens_per_s_hi"] / gpus
            interval = f"{_number(low)}–{_number(high)}"
            runner = (
                f"{_short(row['runner_up_plan'])} ({row['runner_up_margin_pct']:+.1f} %)"
                if row["runner_up_plan"] else "none fits"
            )  # fmt: skip
            lines.append(
                f"  {gpus:>6}  {_short(row['plan']):<44} {_number(per_gpu):>12} {interval:>17} "
                f"{_number(row.get('mfu', float('nan')), 1):>6} "
                f"{_number(row['mem_headroom_gib'], 1):>12}  {runner}"
            )
    for k in knees.itertuples(index=False):
        row = k._asdict()
        if pd.isna(row["knee_x"]):
            lines.append(f"\nknee ({row['gpu']}): none in these GPU counts")
            continue
        why = (
            f"tokens/s per GPU {row['per_gpu_drop_pct']:.1f} % below its best at "
            f"{int(row['best_x'])} GPUs" if row["knee_criterion"] == "per_gpu"
            else f"the doubling adds {row['marginal_pct']:.0f} % of a GPU's worth per added GPU"
        )  # fmt: skip
        lines.append(
            f"\nknee ({row['gpu']}): {int(row['knee_x'])} GPUs, {why}; plan {row['knee_plan']}, "
            f"global batch {int(row['knee_global_batch'])} sequences, "
            f"{row['knee_local_batch']:g} per data-parallel rank (best: "
            f"{row['best_local_batch']:g}); exposed communication "
            f"{row['best_exposed_comm_pct']:.1f} → {row['knee_exposed_comm_pct']:.1f} % and "
            f"bubble {row['best_bubble_pct']:.1f} → {row['knee_bubble_pct']:.1f} % of the step: "
            f"cause {row['knee_cause']}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from trainscale.commands.plan_search import plan_knees, plan_points
    from trainscale.io.tables import check_output, write_table
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.study.plan import PlanRequest, parse_batch_tokens

    if args.output:
        check_output(args.output)
    search = {
        key: tuple(getattr(args, key)) if getattr(args, key) else values
        for key, values in DEFAULT_SEARCH.items()
    }
    request = PlanRequest(
        model=args.model, gpus=tuple(args.gpu), num_gpus=tuple(args.num_gpus),
        seq_len=args.seq_len, framework=args.framework, precision=args.precision,
        global_batch_tokens=(
            parse_batch_tokens(args.global_batch_tokens) if args.global_batch_tokens else None
        ),
        global_batch=args.global_batch, search=search,
    )  # fmt: skip
    calibration = load_calibration(args.calibration) if args.calibration else load_calibration()
    result = plan_points(request, catalogue=load_catalogue(), calibration=calibration)
    print(
        f"best plan of {args.model}, {args.framework}, {args.precision}, sequence {args.seq_len}; "
        f"{len(result.simulated):,} plans fit (calibration {calibration.calibration_id}; "
        "simulated)"
    )
    print(format_plan(result.points, plan_knees(result), result.spec.x))
    if args.output:
        write_table(result.points, args.output)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
