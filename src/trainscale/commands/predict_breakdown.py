"""What ``trainscale predict`` prints of one predicted configuration: the breakdown (time by
phase and collective, throughput with its interval, memory, power), and the warnings for a plan
that does not fit in memory or spends much of its step in the pipeline bubble."""

from __future__ import annotations

import pandas as pd

from trainscale.commands.predict_energy import bill_lines, power_lines

__all__ = ["BUBBLE_WARNING_FRAC", "breakdown", "bubble_warning", "fit_warning"]

#: Share of the step in the pipeline bubble above which one configuration gets a warning.
BUBBLE_WARNING_FRAC = 0.25
#: Micro-batches per pipeline stage that the bubble warning suggests: with ``m = 4·pp``
#: micro-batches per step, 1F1B's bubble is (pp−1)/(5pp−1) of the step, under 20 %.
_MICRO_BATCHES_PER_STAGE = 4
#: GPUs without bf16 tensor cores: their "bf16" is fp16 mixed precision (data/hardware.yaml).
_FP16_ONLY = ("v100",)


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
        f"{result['sharding']}, recompute {result['recompute']}, {_precision(result)}"
        + _finetune_words(result),
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
        *_expert_lines(result, step),
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
        *power_lines(result),
        *bill_lines(result),
        "",
        f"source: simulated (trainscale {result['simulator_version']}, "
        f"calibration {result['calibration_id']})",
    ]
    return "\n".join(lines)


def _expert_lines(result: pd.Series, step: float) -> list[str]:
    """Under exposed comm, for a mixture-of-experts plan with an exchange (``alltoall_s`` > 0):
    the expert layout and routing, and the all-to-all's exposed and busy time; nothing for a
    dense plan."""
    busy = float(result.get("alltoall_s", 0.0) or 0.0)
    if busy <= 0:
        return []
    exposed = float(result["exposed_alltoall_s"])
    routing = result.get("moe_routing") or "dropless"
    dispatcher = result.get("moe_dispatcher") or "the framework's"
    return [
        f"    of which all-to-all {exposed:9.4f} s  {_pct(exposed, step)}  (busy {busy:.4f} s: "
        f"ep {result['ep']}, etp {result['etp']}, edp {result['edp']}; {routing} routing, "
        f"{dispatcher} dispatcher)",
    ]


def _finetune_words(result: pd.Series) -> str:
    """``, LoRA rank 16 (frozen base weights)`` or ``, full fine-tuning``; empty for pretraining."""
    mode = result.get("finetune")
    if mode == "lora":
        return f", LoRA rank {int(result.get('lora_rank', 16))} (frozen base weights)"
    return ", full fine-tuning" if mode == "full" else ""


def _memory_words(result: pd.Series, hbm_gib: float | None) -> str:
    """Whether the plan fits, and whether it fits only within the margin."""
    from trainscale.sim.memory_margin import NEAR_MEMORY_FRACTION, near_memory_limit

    if not result["fits_memory"]:
        return "does NOT fit"
    if hbm_gib is not None and float(result["mem_gib_per_gpu"]) > hbm_gib:
        return (
            f"predicted above the GPU's {hbm_gib:g} GiB, but within the memory model's error "
            "on published runs (flagged in extrapolation; docs/accuracy.md, Memory): it may or "
            "may not fit"
        )
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
    text = (
        f"extrapolation        {flags} (outside the calibration data: the interval is widened; "
        "see docs/simulator/intervals.md)"
    )
    if "beyond_pilot_reach" in flags:
        text += (
            "\n  beyond_pilot_reach  farther from the measured GPU counts than a pilot level beat "
            "the shipped one on the published series (trainscale validate --pilots): predicted "
            "with the shipped level and interval"
        )
    if "unmeasured_level" in flags:
        text += (
            "\n  unmeasured_level    no measured row ran this framework on this GPU: predicted "
            "with the shipped level and interval"
        )
    return text


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
