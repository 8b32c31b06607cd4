"""``trainscale predict``: predict a table of configurations, or explain one configuration.

Two forms:

- ``trainscale predict CONFIGS.csv -o OUT.parquet [--skip-invalid]`` — a table in, a table out
  (CSV or Parquet by extension). Without ``--skip-invalid`` any invalid row is an error that lists
  every invalid row, its column and the allowed values; with it, valid rows are predicted and the
  rejected ones are written to ``OUT.rejects.csv`` with their reasons.
- ``trainscale predict --model llama2-7b --gpu h100-sxm-80gb --num-gpus 2048 --sharding fsdp ...``
  — one configuration, printed as a readable breakdown (time by phase and collective, memory,
  power).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from trainscale.errors import InputFileError, TrainscaleError
from trainscale.schema import PRECISIONS, RECOMPUTE_MODES, SHARDINGS

NAME = "predict"
HELP = "predict step time, throughput, MFU, communication, memory and power"

__all__ = ["HELP", "NAME", "add_arguments", "read_table", "run", "write_table"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configs", nargs="?", type=Path, help="configuration table (.csv/.parquet)")
    parser.add_argument("-o", "--output", type=Path, help="result table (.csv/.parquet)")
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="predict the valid rows; write rejected rows with their reason to OUT.rejects.csv",
    )
    one = parser.add_argument_group("one configuration (instead of a table)")
    one.add_argument("--model", help="model catalogue key, e.g. llama2-7b")
    one.add_argument("--gpu", help="GPU catalogue key, e.g. h100-sxm-80gb")
    one.add_argument("--num-gpus", type=int)
    one.add_argument("--seq-len", type=int, default=4096)
    one.add_argument("--global-batch", type=int, help="sequences per step (default: num_gpus)")
    one.add_argument("--micro-batch", type=int, default=1)
    one.add_argument("--tp", type=int, default=1)
    one.add_argument("--pp", type=int, default=1)
    one.add_argument("--cp", type=int, default=1)
    one.add_argument("--vpp", type=int, default=1)
    one.add_argument("--sharding", choices=SHARDINGS, default="fsdp")
    one.add_argument("--recompute", choices=RECOMPUTE_MODES, default="none")
    one.add_argument("--precision", choices=PRECISIONS, default="bf16")
    one.add_argument("--gpus-per-node", type=int)
    one.add_argument("--nic-gbps-per-gpu", type=float)


def read_table(path: Path) -> pd.DataFrame:
    """Read a CSV or Parquet table; errors name the file."""
    if not path.is_file():
        raise InputFileError(path, "no such file")
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        if path.suffix.lower() == ".csv":
            return pd.read_csv(path)
    except Exception as error:  # pandas raises many types for malformed files
        raise InputFileError(path, f"cannot read table: {error}") from error
    raise InputFileError(path, "unknown extension; use .csv or .parquet")


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Write CSV or Parquet by extension, atomically (a temporary file, then a rename)."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise TrainscaleError(f"{path}: unknown extension; use .csv or .parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".csv":
        frame.to_csv(tmp, index=False)
    else:
        frame.to_parquet(tmp, index=False)
    tmp.replace(path)


def _single(args: argparse.Namespace) -> pd.DataFrame:
    required = (("--model", args.model), ("--gpu", args.gpu), ("--num-gpus", args.num_gpus))
    missing = [flag for flag, value in required if value is None]
    if missing:
        raise TrainscaleError(
            f"give a configuration table, or at least {', '.join(missing)} for one configuration"
        )
    row = {
        "model": args.model,
        "gpu": args.gpu,
        "num_gpus": args.num_gpus,
        "seq_len": args.seq_len,
        "global_batch": args.global_batch
        or args.num_gpus * args.micro_batch // (args.tp * args.pp * args.cp),
        "micro_batch": args.micro_batch,
        "tp": args.tp,
        "pp": args.pp,
        "cp": args.cp,
        "vpp": args.vpp,
        "sharding": args.sharding,
        "recompute": args.recompute,
        "precision": args.precision,
    }
    if args.gpus_per_node:
        row["gpus_per_node"] = args.gpus_per_node
    if args.nic_gbps_per_gpu:
        row["nic_gbps_per_gpu"] = args.nic_gbps_per_gpu
    return pd.DataFrame([row])


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f} %" if whole > 0 else "    -"


def breakdown(result: pd.Series) -> str:
    """A readable breakdown of one predicted configuration."""
    step = float(result["step_time_s"])
    lines = [
        f"{result.get('model') or 'custom'} on {result['num_gpus']} x {result['gpu']}: "
        f"tp {result['tp']}, pp {result['pp']}, cp {result['cp']}, dp {result['dp']}, "
        f"{result['sharding']}, recompute {result['recompute']}, {result['precision']}",
        f"batch: {result['global_batch']} sequences x {result['seq_len']} tokens, micro-batch "
        f"{result['micro_batch']}, gradient accumulation {result['grad_accum']}",
        "",
        f"step time            {step:12.4f} s",
        f"  compute            {result['compute_s']:12.4f} s  {_pct(result['compute_s'], step)}",
        f"  exposed comm       {result['exposed_comm_s']:12.4f} s  "
        f"{_pct(result['exposed_comm_s'], step)}",
        f"  pipeline bubble    {result['bubble_s']:12.4f} s  {_pct(result['bubble_s'], step)}",
        f"  host stall         {result['host_stall_s']:12.4f} s  "
        f"{_pct(result['host_stall_s'], step)}",
        "communication busy time (hidden or not)",
    ]
    for name in ("allgather_s", "reducescatter_s", "allreduce_s", "p2p_s", "straggler_s"):
        label = name.removesuffix("_s")
        lines.append(f"  {label:<18} {result[name]:12.4f} s")
    lines += [
        "",
        f"throughput           {result['tokens_per_s']:12.1f} tokens/s  "
        f"({result['tokens_per_s_per_gpu']:.1f} per GPU)",
        f"MFU / HFU            {100 * result['mfu']:11.2f} % / {100 * result['hfu']:.2f} %",
        f"memory per GPU       {result['mem_gib_per_gpu']:12.2f} GiB  "
        f"({'fits' if result['fits_memory'] else 'does NOT fit'})",
        f"power per GPU        {result['power_w_per_gpu']:12.1f} W",
        f"energy per token     {result['energy_j_per_token']:12.4f} J",
        "",
        f"source: simulated (trainscale {result['simulator_version']}, "
        f"calibration {result['calibration_id']})",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from trainscale.simulate import predict, predict_with_rejects

    if args.configs is None:
        result = predict(_single(args), origin="command line")
        print(breakdown(result.iloc[0]))
        if args.output:
            write_table(result, args.output)
        return 0
    if args.output is None:
        raise TrainscaleError("a configuration table needs -o/--output")
    table = read_table(args.configs)
    if args.skip_invalid:
        result, rejects = predict_with_rejects(table, origin=str(args.configs))
        rejects_path = args.output.with_name(args.output.stem + ".rejects.csv")
        write_table(rejects, rejects_path)
        print(f"{len(result)} predicted, {len(rejects['row'].unique())} rejected -> {rejects_path}")
    else:
        result = predict(table, origin=str(args.configs))
        print(f"{len(result)} predicted")
    write_table(result, args.output)
    return 0
