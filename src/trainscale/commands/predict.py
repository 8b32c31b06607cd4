"""``trainscale predict``: predict a table of configurations, or explain one configuration.

Two forms:

- ``trainscale predict CONFIGS.csv -o OUT.parquet [--skip-invalid]`` — a table in, a table out
  (CSV or Parquet by extension). Without ``--skip-invalid`` any invalid row is an error that lists
  every invalid row, its column and the allowed values; with it, valid rows are predicted and the
  rejected ones are written to ``OUT.rejects.csv`` with their reasons.
- ``--calibration FILE`` predicts with another calibration file (a user calibration written by
  ``trainscale calibrate --measurements``) instead of ``data/calibration.yaml``.
- ``trainscale predict --model llama2-7b --gpu h100-sxm-80gb --num-gpus 2048 --sharding fsdp ...``
  — one configuration, printed as a readable breakdown (time by phase and collective, memory,
  power). A configuration that does not fit in memory prints a warning and exits with status
  :data:`EXIT_DOES_NOT_FIT` (3); one that spends more than :data:`BUBBLE_WARNING_FRAC` of its
  step in the pipeline bubble prints a warning naming a batch that shrinks it (exit 0).
  ``--paper-setup`` fills every option not given with the paper setup of
  :mod:`trainscale.paper.setup`, which the ``claims`` table uses, so that the breakdown
  reproduces the table's numbers.

Input checks made here, before the simulator runs (each a one-line error naming the file and the
row, column or key; docs/bad-input.md lists them all): ``-o`` with an extension other than
``.csv``/``.parquet``, or naming the input file (or its rejects file naming it), is refused
before anything is read; the table's structure (:func:`trainscale.io.tables.read_table`); a
missing required column; a number column holding text that is not a plain number
(:func:`trainscale.sim.inputs.check_table`; text that is a number is converted, so the output's
dtypes are the schema's, never the input's); every number outside its plausible range
(:data:`trainscale.schema.NUMERIC_BOUNDS`, checked by the simulator's validation). A column close
to a configuration column's name (``framwork``) is a warning naming that column; other unknown
columns are carried through untouched. With ``--skip-invalid`` every row with any bad value goes
to the rejects file with its reason, written as the input had it, and the valid rows are
predicted. The output is written to a temporary file in its folder and renamed, so two runs
writing one file never mix and an unwritable ``-o`` is a one-line error; the simulator's own
output checks (:func:`trainscale.sim.simulate.predict`) run before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from trainscale.errors import InputFileError, TrainscaleError
from trainscale.io.numbers import number_problem, parse_number
from trainscale.io.tables import check_output, read_table, write_table
from trainscale.schema import (
    CONFIGURATION_COLUMNS,
    FRAMEWORKS,
    PRECISIONS,
    RECOMPUTE_MODES,
    REJECT_COLUMNS,
    SHARDINGS,
    names,
)
from trainscale.sim.degrees import model_parallel_degree
from trainscale.sim.frameworks import DEFAULT_FRAMEWORK
from trainscale.sim.inputs import (
    MAX_GPUS,
    REQUIRED_COLUMNS,
    SHAPE_COLUMNS,
    check_table,
    missing_configuration_columns,
    unknown_column_warnings,
)

NAME = "predict"
HELP = "predict step time, throughput, MFU, communication, memory and power"

__all__ = [
    "BUBBLE_WARNING_FRAC",
    "DEFAULTS",
    "EXIT_DOES_NOT_FIT",
    "HELP",
    "MAX_GPUS",
    "NAME",
    "add_arguments",
    "bubble_warning",
    "check_table",
    "missing_configuration_columns",
    "read_table",
    "run",
    "write_table",
]

#: Exit status of a single-configuration prediction that does not fit in GPU memory.
EXIT_DOES_NOT_FIT = 3
#: Share of the step in the pipeline bubble above which one configuration gets a warning.
BUBBLE_WARNING_FRAC = 0.25
#: Micro-batches per pipeline stage that the bubble warning suggests: with ``m = 4·pp``
#: micro-batches per step, 1F1B's bubble is (pp−1)/(5pp−1) of the step, under 20 %.
_MICRO_BATCHES_PER_STAGE = 4
#: Defaults of the one-configuration options (shown in ``--help``); ``--global-batch`` has none:
#: without it the batch is dp × micro-batch (see its help).
DEFAULTS: dict[str, object] = {
    "seq_len": 4096, "micro_batch": 1, "tp": 1, "pp": 1, "cp": 1, "vpp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16",
}  # fmt: skip
_REJECT_NAMES = names(REJECT_COLUMNS)
#: GPUs without bf16 tensor cores: their "bf16" is fp16 mixed precision (data/hardware.yaml).
_FP16_ONLY = ("v100",)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The description keeps its line breaks; help lines never break inside a hyphenated word
    (``micro-batch``, ``fernandez-h100``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _plain_float(text: str) -> float:
    """An option's number, read as strictly as a table's (:mod:`trainscale.io.numbers`): no
    ``nan``, ``inf``, separators or units; its range is checked with the configuration."""
    number = parse_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(number_problem(text))
    return number


def _plain_int(text: str) -> int:
    """An option's whole number (``4096``, ``1e3``), read as :func:`_plain_float`."""
    number = _plain_float(text)
    if not number.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text) if text.strip().lstrip("+-").isdigit() else int(number)


def _default(name: str) -> str:
    return f" (default: {DEFAULTS[name]})"


def table_columns_help(width: int = 78) -> str:
    """The epilog of ``predict --help``: the columns a configuration table takes."""
    import textwrap

    optional = [
        c.name for c in CONFIGURATION_COLUMNS
        if c.name not in (*REQUIRED_COLUMNS, *SHAPE_COLUMNS, "model")
    ]  # fmt: skip
    paragraphs = (
        f"Table columns (CONFIGS): {', '.join(REQUIRED_COLUMNS)} are required; the model as "
        f"model (a catalogue key) or its shape ({', '.join(SHAPE_COLUMNS)}; given with model, "
        "they override its values); optional, each empty or absent meaning the default the "
        f"output echoes: {', '.join(optional)}.",
        "Names and units are the options' (seq_len = --seq-len, power_limit_w in W). Choice "
        "values (sharding, recompute, precision, mlp, framework, ...) are read "
        "case-insensitively and written back as the choice (FSDP -> fsdp); catalogue keys "
        "(model, gpu, system) are exact, and a near miss gets a 'did you mean'. A column close "
        "to one of these names is warned about; other columns are carried through untouched. "
        "Every column with its range: docs/bad-input.md.",
    )
    return "\n\n".join(textwrap.fill(p, width, break_on_hyphens=False) for p in paragraphs)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Each default is written into its help (DEFAULTS): the options' argparse defaults are None,
    # so that --paper-setup can tell an option given from one left out.
    parser.formatter_class = _Formatter
    parser.description = (
        f"{HELP}.\n\nA table in (CONFIGS -o OUT), or one configuration (--model, --gpu, "
        "--num-gpus, ...) printed as a breakdown.\nExit status: 0 done; 2 bad input (one line "
        f"naming file, row, column); {EXIT_DOES_NOT_FIT} the one configuration does not fit in "
        "GPU memory (its numbers are printed but cannot be run).\nOn GPUs without bf16 "
        "(V100) --precision bf16 means fp16 mixed precision."
    )
    parser.epilog = table_columns_help()
    parser.add_argument("configs", nargs="?", type=Path, help="configuration table (.csv/.parquet)")
    parser.add_argument("-o", "--output", type=Path, help="result table (.csv/.parquet)")
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
    one = parser.add_argument_group("one configuration (instead of a table)")
    one.add_argument("--model", help="model catalogue key, e.g. llama2-7b")
    one.add_argument("--gpu", help="GPU catalogue key, e.g. h100-sxm-80gb")
    one.add_argument("--num-gpus", type=_plain_int, help=f"GPUs in the job, 1 to {MAX_GPUS:,}")
    one.add_argument(
        "--paper-setup",
        action="store_true",
        help="fill every option not given with the paper setup that the claims table uses "
        "(src/trainscale/paper/setup.py): sequence 4,096, global batch 2,048 sequences, "
        "micro-batch 2 (or the local batch when smaller), fsdp, no recomputation, bf16, "
        "framework pytorch, and on H100 the study's cluster (system fernandez-h100)",
    )
    one.add_argument("--seq-len", type=_plain_int, help="tokens per sequence" + _default("seq_len"))
    one.add_argument(
        "--global-batch",
        type=_plain_int,
        help="sequences per optimizer step (default: dp x micro-batch, dp = num_gpus / (tp x pp "
        "x cp): one micro-batch per step, no gradient accumulation, so with pp > 1 the "
        "pipeline bubble is large and a warning names a batch that shrinks it)",
    )
    one.add_argument(
        "--micro-batch", type=_plain_int, help="sequences per micro-batch" + _default("micro_batch")
    )
    one.add_argument("--tp", type=_plain_int, help="tensor-parallel degree" + _default("tp"))
    one.add_argument("--pp", type=_plain_int, help="pipeline-parallel degree" + _default("pp"))
    one.add_argument("--cp", type=_plain_int, help="context-parallel degree" + _default("cp"))
    one.add_argument(
        "--vpp", type=_plain_int, help="virtual pipeline stages per GPU" + _default("vpp")
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
        "--gpus-per-node",
        type=_plain_int,
        help="GPUs per node (default: the GPU's catalogue system)",
    )
    one.add_argument(
        "--nic-gbit-per-s-per-gpu",
        type=_plain_float,
        help="scale-out NIC bandwidth per GPU, Gb/s (default: the GPU's catalogue system)",
    )
    one.add_argument(
        "--power-limit-w",
        type=_plain_float,
        help="GPU board power limit, W (nvidia-smi -pl); below the TDP the clock drops during "
        "GEMM-bound compute (default: the GPU's TDP, no limit)",
    )
    one.add_argument(
        "--system",
        help="catalogue system (data/hardware.yaml), e.g. fernandez-h100 (default: the GPU's)",
    )
    one.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        help=f"software stack profile (data/frameworks.yaml; default: {DEFAULT_FRAMEWORK})",
    )


def _paper_setup(args: argparse.Namespace) -> dict[str, object]:
    """The paper setup's value of every one-configuration option (``--paper-setup``)."""
    from trainscale.paper.setup import (
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


def _single(args: argparse.Namespace) -> pd.DataFrame:
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
        )
        if values.get(name)
    }
    return pd.DataFrame([row])


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f} %" if whole > 0 else "    -"


def _precision(result: pd.Series) -> str:
    gpu = str(result["gpu"])
    if result["precision"] == "bf16" and gpu.startswith(_FP16_ONLY):
        return "bf16 (fp16 mixed precision: this GPU has no bf16)"
    return str(result["precision"])


def fit_warning(result: pd.Series) -> str | None:
    """The warning line for a configuration that does not fit in memory, else None."""
    if bool(result["fits_memory"]):
        return None
    return (
        f"warning: this configuration does NOT fit in GPU memory ({result['mem_gib_per_gpu']:.1f}"
        " GiB needed per GPU): it cannot run, its numbers are what it would take if it could; "
        "try more GPUs, fsdp, recomputation, or a larger tp/pp"
    )


def bubble_warning(result: pd.Series) -> str | None:
    """The warning line for a configuration that spends more than :data:`BUBBLE_WARNING_FRAC`
    of its step in the pipeline bubble, with a global batch that shrinks it; else None.

    1F1B's bubble costs about (pp − 1) micro-batch times per step whatever the number of
    micro-batches ``m``, so its share falls as ``m`` grows; ``m = 4·pp`` puts it under 20 %.
    """
    step, bubble = float(result["step_time_s"]), float(result["bubble_s"])
    if not step > 0 or bubble / step <= BUBBLE_WARNING_FRAC:
        return None
    pp, dp, micro = int(result["pp"]), int(result["dp"]), int(result["micro_batch"])
    micro_batches = int(result["grad_accum"])
    wanted = _MICRO_BATCHES_PER_STAGE * pp
    suggestion = (
        f": --global-batch {dp * micro * wanted} gives {wanted} ({_MICRO_BATCHES_PER_STAGE} per "
        "stage)"
        if micro_batches < wanted
        else ""
    )
    plural = "" if micro_batches == 1 else "es"
    return (
        f"warning: the pipeline bubble is {100 * bubble / step:.1f} % of the step: "
        f"{micro_batches} micro-batch{plural} per step (global batch "
        f"{int(result['global_batch'])} = dp {dp} x micro-batch {micro} x {micro_batches}) for "
        f"{pp} pipeline stages; more micro-batches per step shrink its share{suggestion}"
    )


def _yes(flag: object) -> str:
    return "yes" if bool(flag) else "no"


def breakdown(result: pd.Series, caution: str | None = None, hbm_gib: float | None = None) -> str:
    """A readable breakdown of one predicted configuration; ``caution``
    (:func:`trainscale.sim.interval_caution.interval_caution`) is printed under its interval;
    ``hbm_gib``, the GPU's memory, flags a plan that fits within the margin of
    :data:`trainscale.sim.memory_margin.NEAR_MEMORY_FRACTION`."""
    step = float(result["step_time_s"])
    lines = [
        f"{result.get('model') or 'custom'} on {result['num_gpus']} x {result['gpu']}: "
        f"tp {result['tp']}, pp {result['pp']}, cp {result['cp']}, dp {result['dp']}, "
        f"{result['sharding']}, recompute {result['recompute']}, {_precision(result)}",
        f"batch: {result['global_batch']} sequences x {result['seq_len']} tokens, micro-batch "
        f"{result['micro_batch']}, gradient accumulation {result['grad_accum']}",
        f"stack: {result['framework']} on {result['system']} (overlap grad reduce "
        f"{_yes(result['overlap_grad_reduce'])}, param gather "
        f"{_yes(result['overlap_param_gather'])}, TP comm {_yes(result['tp_comm_overlap'])}; "
        "fused kernels "
        f"{_yes(result['fused_kernels'])}; {result['shard_granularity']} gathers; "
        f"{result['attention_kernel']} attention; GPU power limit "
        f"{float(result['power_limit_w']):.0f} W)",
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
    for name in ("allgather_s", "reducescatter_s", "allreduce_s", "p2p_s"):
        label = name.removesuffix("_s")
        lines.append(f"  {label:<18} {result[name]:12.4f} s")
    lines.append(
        f"  {'of which waiting':<18} {result['straggler_s']:12.4f} s  for the slowest GPU "
        "inside collectives (not a collective)"
    )
    lines += [
        "",
        f"throughput           {result['tokens_per_s']:12.1f} tokens/s  "
        f"({result['tokens_per_s_per_gpu']:.1f} per GPU)",
        _interval_line(result),
        *([f"  caution            {caution}"] if caution else []),
        _extrapolation_line(result),
        f"MFU / HFU            {100 * result['mfu']:11.2f} % / {100 * result['hfu']:.2f} %"
        + (
            " (above 100 %: the FLOP convention counts attention without the causal mask)"
            if max(result["mfu"], result["hfu"]) > 1
            else ""
        ),
        f"memory per GPU       {result['mem_gib_per_gpu']:12.2f} GiB  "
        f"({_memory_words(result, hbm_gib)})",
        f"power per GPU        {result['power_w_per_gpu']:12.1f} W",
        f"energy per token     {result['energy_j_per_token']:12.4f} J",
        "",
        f"source: simulated (trainscale {result['simulator_version']}, "
        f"calibration {result['calibration_id']})",
    ]
    return "\n".join(lines)


def _memory_words(result: pd.Series, hbm_gib: float | None) -> str:
    """Whether the plan fits, and whether it fits only within the margin."""
    from trainscale.sim.memory_margin import NEAR_MEMORY_FRACTION, near_memory_limit

    if not result["fits_memory"]:
        return "does NOT fit"
    if hbm_gib is not None and near_memory_limit(float(result["mem_gib_per_gpu"]), hbm_gib):
        return (
            f"fits, but uses more than {100 * NEAR_MEMORY_FRACTION:.0f} % of the GPU's "
            f"{hbm_gib:g} GiB: allocator fragmentation and workspaces, which the memory model "
            "does not count, may not fit"
        )
    return "fits"


def _extrapolation_line(result: pd.Series) -> str:
    """The ``extrapolation`` flags (:mod:`trainscale.sim.support`): what no calibration row
    covers, or that every flag is clear."""
    flags = result.get("extrapolation")
    if flags is None or pd.isna(flags) or flags == "":
        return "extrapolation        none (inside the calibration data's coverage)"
    return (
        f"extrapolation        {flags} (outside the calibration data: the interval is widened; "
        "see docs/simulator/intervals.md)"
    )


def _interval_line(result: pd.Series) -> str:
    """The 80 % interval of the prediction, or why there is none."""
    lo, hi = result.get("tokens_per_s_per_gpu_lo"), result.get("tokens_per_s_per_gpu_hi")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return "80 % interval        none (the calibration file has no intervals block)"
    return (
        f"80 % interval        {lo:12.1f} .. {hi:.1f} tokens/s per GPU, step time "
        f"{result['step_time_s_lo']:.4f} .. {result['step_time_s_hi']:.4f} s (split conformal on "
        "errors on sources left out of the fit)"
    )


def run(args: argparse.Namespace) -> int:
    from trainscale.sim.calibration import load_calibration
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.sim.interval_caution import interval_caution, interval_cautions
    from trainscale.sim.simulate import predict, predict_with_rejects

    if args.calibration is not None and not args.calibration.is_file():
        raise InputFileError(args.calibration, "no such calibration file")
    calibration = load_calibration(args.calibration) if args.calibration else None
    if args.configs is None:
        if args.output:
            check_output(args.output)
        result = predict(
            check_table(_single(args), "command line"), origin="command line",
            calibration=calibration,
        )  # fmt: skip
        row = result.iloc[0]
        caution = interval_caution(
            (calibration or load_calibration()).intervals, str(row["framework"]), str(row["gpu"])
        )
        gpus = load_catalogue().hardware.gpus
        hbm = gpus[row["gpu"]].hbm_bytes / 2**30 if row["gpu"] in gpus else None
        print(breakdown(row, caution, hbm))
        if args.output:
            write_table(result, args.output)
        bubble = bubble_warning(row)
        if bubble is not None:
            print(f"trainscale predict: {bubble}", file=sys.stderr)
        warning = fit_warning(row)
        if warning is not None:
            print(f"trainscale predict: {warning}", file=sys.stderr)
            return EXIT_DOES_NOT_FIT
        return 0
    if args.output is None:
        raise TrainscaleError("a configuration table needs -o/--output")
    rejects_path = args.output.with_name(args.output.stem + ".rejects.csv")
    check_output(args.output, args.configs, rejects_path if args.skip_invalid else None)
    given = read_table(args.configs).reset_index(drop=True)
    for warning in unknown_column_warnings(given.columns):
        print(f"trainscale predict: warning: {args.configs}: {warning}", file=sys.stderr)
    # Text that is not a number stays text: the simulator's validation names it with every
    # other problem of the table at once (or rejects its row alone, with --skip-invalid).
    table = check_table(given, str(args.configs), keep_text=True)
    if args.skip_invalid:
        result, rejects = predict_with_rejects(
            table, origin=str(args.configs), calibration=calibration
        )
        # The rejected rows as the file had them (text and all), not as converted.
        as_given = given.iloc[rejects["row"].to_numpy(dtype=int)].reset_index(drop=True)
        rejects = as_given.assign(**{name: rejects[name].to_numpy() for name in _REJECT_NAMES})
        write_table(rejects, rejects_path, schema_types=False)
        print(f"{len(result)} predicted, {len(rejects['row'].unique())} rejected -> {rejects_path}")
    else:
        result = predict(table, origin=str(args.configs), calibration=calibration)
        print(f"{len(result)} predicted")
    intervals = (calibration or load_calibration()).intervals
    for framework, gpu, n, text in interval_cautions(intervals, result):
        print(f"trainscale predict: note: {n} row(s) of {framework} on {gpu}: {text}")
    unfit = int((~result["fits_memory"].astype(bool)).sum()) if len(result) else 0
    if unfit:
        verb = "does" if unfit == 1 else "do"
        print(f"{unfit} of them {verb} not fit in GPU memory (fits_memory = false)")
    if len(result):
        bubbly = int((result["bubble_s"] > BUBBLE_WARNING_FRAC * result["step_time_s"]).sum())
        if bubbly:
            verb = "spends" if bubbly == 1 else "spend"
            print(
                f"{bubbly} of them {verb} more than {100 * BUBBLE_WARNING_FRAC:.0f} % of the step "
                "in the pipeline bubble (bubble_s): too few micro-batches per step for "
                + ("its pp" if bubbly == 1 else "their pp")
            )
        above = int(((result["mfu"] > 1) | (result["hfu"] > 1)).sum())
        if above:
            print(
                f"{above} of them {'has' if above == 1 else 'have'} MFU or HFU above 100 %: "
                "the FLOP convention counts attention without the causal mask (flagged mfu:/hfu: "
                "in the extrapolation column; docs/bad-input.md)"
            )
    write_table(result, args.output)
    return 0
