"""Normalise ``data/published/measurements.csv`` into configurations the simulator can predict.

Every row of the file ends in exactly one of three places:

- **throughput rows** — a configuration (the configuration-table columns) plus the published
  number, its metric, and the same number as tokens/s per GPU (``observed_tokens_per_s_per_gpu``)
  converted with the FLOP convention its source used (see :func:`flops_per_token`);
- **collective rows** — nccl-tests bus bandwidths, predicted with the collective cost model;
- **rejects** — with the reason the simulator cannot represent the row.

Free text (``H100-80GB``, ``PyTorch FSDP FULL_SHARD``, ``full AC (per block)``) is mapped to
catalogue keys here and nowhere else. Where a source leaves out a field the simulator needs, the
row either gets a documented assumption (listed in its ``assumptions`` column and in
:data:`ASSUMPTIONS`) or is rejected; nothing is guessed silently.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.sim.degrees import data_parallel_degree
from trainscale.sim.model.flops import model_flops_per_token

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = [
    "ASSUMPTIONS",
    "BEHAVIOUR_OVERRIDES",
    "FRAMEWORK_PROFILES",
    "FrameworkNotMapped",
    "PublishedData",
    "flops_per_token",
    "framework_mapping",
    "framework_profile",
    "load_published",
    "observed_tokens_per_s_per_gpu",
]

#: Assumptions made for fields a source does not print, by source (shown in the validation table).
ASSUMPTIONS: dict[str, str] = {
    "Narayanan": "micro-batch 1 where not printed (Table 1); Table 2 PTD-P 174.6B split as tp 8 x "
    "pp 12 (the paper's rule: TP up to the 8 GPUs of a node, PP across nodes); 1F1B without "
    "interleaving (depth not printed); Megatron data parallelism = ddp",
    "Llama 3": "micro-batch 1; interleaved 1F1B with 2 virtual stages (interleaving stated, depth "
    "not printed); 131K-context row predicted with dp 8, the value consistent with its 16,384 "
    "GPUs and 16M-token batch; FSDP without resharding after forward = zero2",
    "torchtitan benchmarks": "H100 96GB HBM2e (h100-sxm-96gb, 2.4 TB/s, on the "
    "grand-teton-h100-96gb system) at its stated 500 W power limit (power_limit_w 500); its "
    "tensor-core peak is taken as the SXM die's (the source does not know the exact value); "
    "sequence length 8192 (torchtitan's llama3 default) where not printed; with pipeline "
    "parallelism the local batch is split into as many micro-batches as pipeline stages "
    "(pytorch/torchtitan@9dec370 --experimental.pipeline_parallel_microbatches: 'The default "
    "value will be the number of pipeline stages'; neither the benchmark page nor "
    "train_configs/llama3_405b.toml sets it); interleaved 1F1B with 2 stages per rank; with "
    "pipeline parallelism FSDP2 keeps parameters unsharded after forward = zero2 "
    "(pytorch/torchtitan@9dec370 torchtitan/parallelisms/parallelize_llama.py apply_fsdp: "
    "'For PP, do not reshard after forward to avoid per-microbatch all-gathers')",
    "torchtitan docs": "'selective layer' and 'selective op' activation checkpointing = selective",
    "PyTorch/IBM blog: Maximizing": "inter-node bandwidth per node divided by 8 GPUs; 'selective "
    "every n blocks' = selective",
    "Shoeybi": "DGX-2H: 16 GPUs per node, 8 x 100 Gb/s per node; activation checkpointing (the "
    "paper's FLOP count includes the recomputed forward); weak-scaling efficiencies "
    "converted to TFLOP/s per GPU with the published 39 TFLOP/s single-GPU baseline; micro-batch = "
    "the printed batch per model-parallel group",
    "llm-foundry": "RoCE 1600 Gb/s per node = 200 Gb/s per GPU; H100 network not printed: the "
    "DGX H100 default (400 Gb/s per GPU)",
    "Megatron-Bridge": "dense Llama rows only (MoE rows rejected); shape from the catalogue "
    "(llama3-8b/70b/405b, identical to the row's columns: GQA 8 KV heads, SwiGLU); vpp = the "
    "notes' 'VP' (n/a = 1); global batch and micro-batch as printed, gradient accumulation "
    "derived as GBS/(MBS x dp) and checked against the notes' 'GA' where printed (26.02 prints "
    "none); 'DDP (FSDP=0)' = ddp as printed (the recipes' distributed optimizer is not stated "
    "on the page, so not assumed); Llama 3 8B FSDP column = 1 in the main 25.11 page (read as "
    "the on/off flag) and 8 in the archive copy (the sharding group size): both mean FSDP "
    "over the 8 data-parallel GPUs = fsdp; activation recomputation not printed: none; network "
    "not printed: the DGX H100 default (8 x 400 Gb/s InfiniBand, the page names DGX-H100); "
    "FP8-CS = fp8 with Transformer Engine current scaling, 26.02 'FP8' = fp8 with the recipe "
    "not stated",
}

#: Keys of the framework profiles a throughput row's ``framework`` column may hold.
FRAMEWORK_PROFILES: tuple[str, ...] = ("megatron", "deepspeed", "pytorch")

#: Per-row behaviour overrides (empty/NA = the framework profile's default), with their values.
BEHAVIOUR_OVERRIDES: dict[str, tuple[object, ...]] = {
    "overlap_grad_reduce": (True, False),
    "overlap_param_gather": (True, False),
    "tp_comm_overlap": (True, False),
    "fused_kernels": (True, False),
    "shard_granularity": ("layer", "tensor"),
    "attention_kernel": ("flash2", "fused", "triton"),
    "fp8_recipe": ("delayed", "current", "tensorwise", "rowwise"),
    "repeat_kv": (True, False),
    "cp_comm_type": ("p2p", "all_gather"),
}

_LLM_FOUNDRY_ATTENTION = (
    "llm-foundry's benchmark submitter sets the model's attention to --attn_impl, default "
    "'triton' (mosaicml/llm-foundry scripts/train/benchmarking/submit_benchmarks.py, "
    "parameters['model']['attn_impl'] = args.attn_impl; the MPT yamls also say attn_impl: "
    "triton): FlashAttention written in Triton"
)

_MEGATRON_2021 = (
    "NVIDIA/Megatron-LM@aed2f75e (2021-04-11, the PTD-P code): megatron/training.py "
    "train_step all-reduces the gradients (DistributedDataParallel.allreduce_gradients, "
    "megatron/model/distributed.py) after forward_backward_func returns, so the data-parallel "
    "reduction is not overlapped with backward (--overlap-grad-reduce arrived in 2d5220a4, "
    "2023-08-16); megatron/mpu/mappings.py _reduce is a blocking all_reduce, so tensor-parallel "
    "communication is not overlapped either"
)
_DEEPSPEED_2021 = (
    "microsoft/DeepSpeed v0.3.14 (0cd9abf2, April 2021, the ZeRO-3 of the paper's time): "
    'deepspeed/runtime/zero/stage3.py fetch_sub_module is blocking ("This call is blocking") '
    "and partition_parameters.py _allgather_param calls torch.cuda.synchronize() before each "
    "parameter's all_gather, so parameter gathers are not overlapped with compute (DeepSpeed "
    "PR #1188, merged 2021-10-31: 'the async version is not async at all, because each "
    "all_gather calls torch.cuda.synchronize()')"
)
_MEGATRON_2019 = (
    "NVIDIA/Megatron-LM@ebbe40cd (2019-10-09, the v1 code): pretrain_gpt2.py calls "
    "model.allreduce_params after loss.backward() (the backward hooks in "
    "megatron/model/distributed.py are commented out), so the data-parallel reduction is not "
    "overlapped with backward; mpu/mappings.py all-reduces each tensor-parallel output "
    "synchronously in forward and backward (Transformer Engine's TP overlap came in 2023)"
)
_TORCHTITAN_2412 = (
    "pytorch/torchtitan@9dec370 (the benchmark's commit): torchtitan/float8.py supports only "
    "dynamic tensorwise scaling (config_manager.py --float8.scaling_type_* default 'dynamic') "
    "= fp8_recipe tensorwise; AsyncTP = --experimental.enable_async_tensor_parallel, stated per "
    "row (Table 4 compares 2D with and without it; Tables 5-6 use it); torch.compile "
    "(--training.compile, each TransformerBlock compiled) stated per row = fused_kernels"
)

_LLAMA3_CONTEXT_PARALLEL = (
    "Llama 3 Herd of Models (arXiv 2407.21783) section 3.3.2: context parallelism is "
    "'all-gather based': K and V are all-gathered and attention is computed for the local Q "
    "chunk, and with GQA 'the K and V tensors are much smaller than Q' (gathered as kv_heads "
    "heads, not repeated) = cp_comm_type all_gather, repeat_kv false"
)

_GPU_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"GH200", "gh200-96gb"),  # before H200: "GH200" contains "H200"
    (r"H800", "h800-sxm-80gb"),
    (r"A800", "a800-sxm-80gb"),
    (r"H200", "h200-sxm-141gb"),
    (r"H100.*96\s*GB.*HBM2e", "h100-sxm-96gb"),  # before H100: Meta's Grand Teton part
    (r"H100", "h100-sxm-80gb"),
    (r"A100.*40\s*GB", "a100-sxm-40gb"),
    (r"A100", "a100-sxm-80gb"),
    (r"V100", "v100-sxm-32gb"),
    (r"B200", "b200"),
)

_MODEL_CATALOGUE: tuple[tuple[str, str], ...] = (
    (r"^Llama 2 13B$|^Llama 2 architecture 13B$", "llama2-13b"),
    (r"^Llama 2 70B$|^Llama 2 architecture 70B$", "llama2-70b"),
    (r"^Llama 2 architecture 7B$", "llama2-7b"),
    (r"^Llama 3 8B$", "llama3-8b"),
    (r"^Llama 3 70B$", "llama3-70b"),
    (r"^LLAMA3_8B$", "llama3-8b"),  # Megatron-Bridge names
    (r"^LLAMA3_70B$", "llama3-70b"),
    (r"^LLAMA3\.1_405B$", "llama3-405b"),
)


@dataclass(frozen=True, slots=True)
class PublishedData:
    """The three destinations of the published rows."""

    throughput: pd.DataFrame
    """Configuration columns, provenance, ``published_metric``, ``published_value``,
    ``observed_tokens_per_s_per_gpu``, ``flop_convention``, ``assumptions``, ``csv_row``,
    ``framework`` (one of :data:`FRAMEWORK_PROFILES`), ``framework_text`` (the source's wording)
    and the behaviour overrides of :data:`BEHAVIOUR_OVERRIDES` (NA = the profile's default)."""
    collectives: pd.DataFrame
    """``csv_row``, provenance, ``collective`` (allreduce, allgather, reducescatter, alltoall,
    sendrecv), ``algorithm`` ("" = NCCL's choice, or the forced nvlstree/nvls/ring/tree),
    ``size_bytes``, ``num_gpus``, ``gpus_per_node``, ``gpu``, ``nic_gbit_per_s_per_gpu``,
    ``fabric``,
    ``nvls`` (False where NVLS was disabled), ``observed_busbw_gbytes_per_s``, ``assumptions``."""
    rejects: pd.DataFrame
    """``csv_row``, provenance, ``published_metric``, ``published_value_text``, ``reason``."""


def _num(value: object) -> float:
    """Parse a number written as text; NaN for empty, ranges and bounds."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        return np.nan


def _int(value: object) -> int | None:
    number = _num(value)
    if not np.isfinite(number) or number != int(number):
        return None
    return int(number)


def _gpu_key(text: str) -> str | None:
    for pattern, key in _GPU_PATTERNS:
        if re.search(pattern, text or "", flags=re.IGNORECASE):
            return key
    return None


def _sharding(text: str) -> str | None:
    t = (text or "").lower()
    if "cpu offload" in t:
        return None
    if re.search(r"fsdp\s*=\s*0", t):  # Megatron-Bridge "DDP (FSDP=0)"
        return "ddp"
    if "shard_grad_op" in t or "not resharded" in t:
        return "zero2"
    if "hybrid" in t:
        return "hsdp"
    if "zero-3" in t or "fsdp" in t or "full_shard" in t:
        return "fsdp"
    if "none" in t or "all-reduce" in t or t == "":
        return "ddp"
    return None


def _recompute(text: str) -> str:
    t = (text or "").lower()
    if "selective" in t:
        return "selective"
    if "full" in t or "checkpointing" in t:
        return "full"
    return "none"


def _precision(text: str) -> str:
    return "fp8" if "fp8" in (text or "").lower() else "bf16"


def _power_limit_w(text: str) -> float:
    """A board power limit stated with the GPU ("500W power limit"), else 0 (the TDP)."""
    match = re.search(r"(\d+)\s*W\s+power\s+limit", text or "", flags=re.IGNORECASE)
    return float(match.group(1)) if match else 0.0


def _nic_gbit_per_s_per_gpu(text: str, gpus_per_node: int) -> float | None:
    """Per-GPU NIC line rate in Gb/s from a free-text inter-node description."""
    t = text or ""
    if m := re.search(r"(\d+)\s*Gb(?:ps|/s)? per GPU", t, flags=re.IGNORECASE):
        return float(m.group(1))
    if m := re.search(r"(\d+)\s*x\s*(\d+)\s*Gbps per node", t, flags=re.IGNORECASE):
        return float(m.group(1)) * float(m.group(2)) / gpus_per_node
    if m := re.search(r"(\d+)\s*Gbps (?:per node|inter-node)", t, flags=re.IGNORECASE):
        return float(m.group(1)) / gpus_per_node
    if m := re.search(r"(\d+)\s*GB/s per server", t):
        return float(m.group(1)) * 8 / gpus_per_node
    if m := re.search(r"EFA (\d+)\s*x\s*(\d+)\s*Gbps", t):
        return float(m.group(1)) * float(m.group(2)) / gpus_per_node
    if m := re.search(r"EFA (\d+)\s*Gbps per node", t):
        return float(m.group(1)) / gpus_per_node
    if "TCPXO" in t:
        return 1600.0 / gpus_per_node  # a3-mega: 8 x 200 Gb/s per node (not stated in the file)
    return None


def _fabric(text: str) -> str:
    t = (text or "").lower()
    if "efa" in t:
        return "efa"
    if "roce" in t or "tcpxo" in t:
        return "roce"
    if "ethernet" in t or "tcp/ip" in t:
        return "ethernet"
    return "infiniband"


def _assumption_for(source: str) -> str:
    return "; ".join(text for key, text in ASSUMPTIONS.items() if key in source)


def flops_per_token(convention: str, configs: pd.DataFrame) -> np.ndarray:
    """FLOPs per token under a source's convention, for rows with resolved shape columns.

    - ``model``: trainscale's MFU convention (:mod:`trainscale.sim.model.flops`), used by Llama 3
      and torchtitan;
    - ``megatron``: Narayanan et al. eq. (3) per token, ``96·l·h²·(1 + s/(6h) + V/(16·l·h))``,
      which counts the recomputed forward pass (also Shoeybi et al., appendix A).
    """
    l = configs["layers"].to_numpy(np.float64)  # noqa: E741
    h = configs["hidden"].to_numpy(np.float64)
    s = configs["seq_len"].to_numpy(np.float64)
    v = configs["vocab"].to_numpy(np.float64)
    if convention == "megatron":
        return 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
    if convention == "model":
        return model_flops_per_token(
            l, h, configs["heads"].to_numpy(np.float64), configs["kv_heads"].to_numpy(np.float64),
            configs["ffn"].to_numpy(np.float64), v, configs["mlp"].to_numpy() == "swiglu", s,
        )  # fmt: skip
    raise ValueError(f"unknown FLOP convention {convention!r}")


def observed_tokens_per_s_per_gpu(throughput: pd.DataFrame) -> np.ndarray:
    """The published number of each throughput row as tokens/s per GPU."""
    value = throughput["published_value"].to_numpy(np.float64)
    metric = throughput["published_metric"].to_numpy()
    out = np.full(len(throughput), np.nan)
    for convention in ("model", "megatron"):
        rows = throughput["flop_convention"].to_numpy() == convention
        if rows.any():
            flops = flops_per_token(convention, throughput.loc[rows])
            out[rows] = value[rows] * 1e12 / flops
    direct = metric == "tokens_per_s_per_GPU"
    out[direct] = value[direct]
    step = metric == "step_time_ms"
    tokens = throughput["global_batch"].to_numpy(np.float64) * throughput["seq_len"].to_numpy(
        np.float64
    )
    out[step] = (
        tokens[step] / (value[step] / 1e3) / throughput["num_gpus"].to_numpy(np.float64)[step]
    )
    return out


# --------------------------------------------------------------------------------------------
# Strict reading: a malformed row stops with an InputFileError naming file, line, column, value.

#: Every metric of README section 3 (anything else is a typo or an undocumented addition).
KNOWN_METRICS: tuple[str, ...] = (
    "tokens_per_s_per_GPU", "achieved_TFLOPs_per_GPU", "TFLOPs_per_GPU", "MFU_pct",
    "weak_scaling_efficiency_pct", "scaling_efficiency_pct", "aggregate_PFLOPs", "step_time_ms",
    "busbw_GBps", "power_w_per_gpu_avg", "power_w_per_gpu_checkpointing",
    "node_power_kW_max_observed", "node_power_fraction_of_TDP_pct", "power_note",
)  # fmt: skip
_REQUIRED_COLUMNS = ("source", "url", "model", "gpu", "num_gpus", "metric", "value", "notes")
_INTEGER_COLUMNS = ("layers", "hidden", "heads", "ffn", "vocab", "seq_len", "global_batch_seqs",
                    "micro_batch", "gpus_per_node", "tp", "pp", "dp", "cp")  # fmt: skip
_NUMBER = r"\d+(?:\.\d+)?"
_VALUE_FORMS = (
    "a plain number (137 or 1.5), a lower bound ('>173'), an approximate value ('~350') or a "
    "range ('47-48')"
)
#: busbw above this multiple of the GPU's NVLink bandwidth per direction is impossible
#: (NVLink SHARP reaches about 1.07x on H100 and 0.94x on B200; 3x leaves room for any algorithm).
BUSBW_NVLINK_LIMIT = 3.0


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """The ``value`` field, parsed: ``kind`` is number, lower_bound, approximate, range or text."""

    kind: str
    number: float
    """The number (lower bound, approximate value, or the low end of a range); NaN for text."""
    high: float
    """The high end of a range; equal to ``number`` otherwise."""


def _bad(path: Path, line: int, column: str, value: str, allowed: str) -> InputFileError:
    return InputFileError(
        path, f"column '{column}': {value!r} is not valid; allowed: {allowed}", line=line
    )


def parse_value(text: str, metric: str, *, path: Path, line: int) -> ParsedValue:
    """Parse the ``value`` field per README section 1; raise for anything else."""
    s = text.strip()
    allowed = _VALUE_FORMS + (" or text" if metric == "power_note" else
                              " (text only in power_note rows)")  # fmt: skip
    if metric == "power_note":
        if not s:
            raise _bad(path, line, "value", text, allowed)
        return ParsedValue("text", np.nan, np.nan)
    if re.fullmatch(rf"-\s*{_NUMBER}", s):
        raise _bad(path, line, "value", text, "a value that is not negative: " + allowed)
    if re.fullmatch(_NUMBER, s):
        return ParsedValue("number", float(s), float(s))
    if m := re.fullmatch(rf">\s*({_NUMBER})", s):
        return ParsedValue("lower_bound", float(m.group(1)), float(m.group(1)))
    if m := re.fullmatch(rf"~\s*({_NUMBER})", s):
        return ParsedValue("approximate", float(m.group(1)), float(m.group(1)))
    if m := re.fullmatch(rf"({_NUMBER})\s*-\s*({_NUMBER})", s):
        low, high = float(m.group(1)), float(m.group(2))
        if low > high:
            raise _bad(path, line, "value", text, "a range written low-high: " + allowed)
        return ParsedValue("range", low, high)
    raise _bad(path, line, "value", text, allowed)


def _check_numeric_columns(path: Path, line: int, record: dict[str, str]) -> None:
    for column in _INTEGER_COLUMNS:
        text = record.get(column, "").strip()
        if text and not (re.fullmatch(_NUMBER, text) and float(text) == int(float(text))
                         and float(text) > 0):  # fmt: skip
            raise _bad(path, line, column, record[column],
                       "empty or a positive whole number (e.g. 24 or 24.0)")  # fmt: skip
    params = record.get("params_b", "").strip()
    if params and not (re.fullmatch(_NUMBER, params) and float(params) > 0):
        raise _bad(path, line, "params_b", record["params_b"],
                   "empty or a positive number of billions (e.g. 6.7)")  # fmt: skip
    gpus = record.get("num_gpus", "").strip()
    if gpus and not (
        (re.fullmatch(r"\d+", gpus) and int(gpus) > 0) or re.fullmatch(r"\d+ and \d+", gpus)
    ):
        raise _bad(path, line, "num_gpus", record["num_gpus"],
                   "empty, a positive whole number, or 'N and M' for a source that gives "
                   "several GPU counts")  # fmt: skip


def _check_physical(
    path: Path, line: int, record: dict[str, str], value: ParsedValue, hardware: HardwareCatalog
) -> None:
    """Refuse values no hardware in the catalogue can produce (against the row's GPU)."""
    if value.kind == "text":
        return
    metric, number = record["metric"], value.high
    key = _gpu_key(record.get("gpu", ""))
    gpus = [hardware.gpus[key]] if key in hardware.gpus else list(hardware.gpus.values())
    fp8 = "fp8" in record.get("precision", "").lower()
    peak = max((g.fp8_flops_per_s if fp8 and g.fp8_flops_per_s else g.bf16_flops_per_s)
               for g in gpus) / 1e12  # fmt: skip
    where = f"the dense {'FP8' if fp8 else 'BF16'} peak of {key or 'any catalogued GPU'}"
    limits: dict[str, tuple[float, str]] = {
        "achieved_TFLOPs_per_GPU": (peak, f"at most {peak:g} TFLOP/s ({where})"),
        "TFLOPs_per_GPU": (peak, f"at most {peak:g} TFLOP/s ({where})"),
        "MFU_pct": (100.0, "at most 100 %"),
        "busbw_GBps": (
            BUSBW_NVLINK_LIMIT * max(g.nvlink_bytes_per_s for g in gpus) / 1e9,
            f"at most {BUSBW_NVLINK_LIMIT:g} x the NVLink bandwidth per direction of "
            f"{key or 'any catalogued GPU'}",
        ),
        "power_w_per_gpu_avg": (max(g.tdp_w for g in gpus), f"at most the TDP of {key or 'a GPU'}"),
        "power_w_per_gpu_checkpointing": (
            max(g.tdp_w for g in gpus),
            f"at most the TDP of {key or 'a GPU'}",
        ),
    }
    if metric == "aggregate_PFLOPs":
        count = record.get("num_gpus", "").strip()
        if count.isdigit():
            per_gpu = number * 1e3 / int(count)
            if per_gpu > peak:
                raise _bad(path, line, "value", record["value"],
                           f"an aggregate of at most {peak:g} TFLOP/s x {count} GPUs "
                           f"({where}); this is {per_gpu:g} TFLOP/s per GPU")  # fmt: skip
        return
    if metric in limits and number > limits[metric][0]:
        raise _bad(path, line, "value", record["value"],
                   f"{limits[metric][1]}, physically possible for {metric}")  # fmt: skip


def _check_record(
    path: Path, line: int, record: dict[str, str], hardware: HardwareCatalog
) -> ParsedValue:
    """Validate one record; return its parsed value."""
    for column in ("source", "url", "metric"):
        if not record.get(column, "").strip():
            raise _bad(path, line, column, record.get(column, ""),
                       "a non-empty text: every row needs a source, url and metric")  # fmt: skip
    if not re.match(r"https?://", record["url"].strip()):
        raise _bad(path, line, "url", record["url"], "an http:// or https:// address")
    metric = record["metric"].strip()
    if metric not in KNOWN_METRICS:
        raise _bad(path, line, "metric", record["metric"], ", ".join(KNOWN_METRICS))
    _check_numeric_columns(path, line, record)
    value = parse_value(record.get("value", ""), metric, path=path, line=line)
    _check_physical(path, line, record, value, hardware)
    return value


def _read_records(path: Path) -> list[tuple[int, dict[str, str]]]:
    """``(line, record)`` per data row, read with the csv module and checked for structure."""
    try:
        handle = path.open(newline="", encoding="ascii")
    except OSError as error:
        raise InputFileError(path, f"cannot read: {error}") from error
    out: list[tuple[int, dict[str, str]]] = []
    with handle:
        reader = csv.reader(handle, strict=True)
        last = 0
        try:
            header = next(reader, None)
            if header is None:
                raise InputFileError(path, "empty file; expected a header row", line=1)
            last = reader.line_num
            if len(set(header)) != len(header):
                raise InputFileError(path, f"duplicate column names in the header {header}",
                                     line=1)  # fmt: skip
            missing = [c for c in _REQUIRED_COLUMNS if c not in header]
            if missing:
                raise InputFileError(path, f"missing column(s) {', '.join(missing)}", line=1)
            for fields in reader:
                line = last + 1
                if reader.line_num != line:
                    raise InputFileError(
                        path, f"a record runs over lines {line}-{reader.line_num}: a quote is "
                        "not closed (every row of the file is one line)", line=line,
                    )  # fmt: skip
                last = reader.line_num
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise InputFileError(
                        path, f"{len(fields)} fields where the header has {len(header)}: broken "
                        "quoting (a field with a comma must be double-quoted) or a missing or "
                        "extra comma", line=line,
                    )  # fmt: skip
                out.append((line, dict(zip(header, fields, strict=True))))
        except csv.Error as error:
            raise InputFileError(
                path,
                f"broken CSV quoting in the record that starts on this line (detected on line "
                f"{reader.line_num}): {error}",
                line=last + 1,
            ) from error  # fmt: skip
        except UnicodeDecodeError as error:
            raise InputFileError(path, f"not ASCII text: {error}") from error
    return out


# --------------------------------------------------------------------------------------------
# Framework profiles and per-row behaviour overrides.


class FrameworkNotMapped(ValueError):
    """A framework text that :func:`framework_profile` cannot map to a profile."""


#: (pattern on the framework text, profile), first match wins: DeepSpeed before Megatron,
#: because Narayanan's ZeRO-3 rows ran Megatron-LM on DeepSpeed ZeRO-3.
_FRAMEWORK_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"deepspeed|\bzero-?[123]\b", "deepspeed"),
    (r"megatron|\bnemo\b", "megatron"),
    (r"torchtitan|composer|llm-foundry|fairseq|metaseq|fms-fsdp|pytorch|\bfsdp2?\b|\bddp\b",
     "pytorch"),
)  # fmt: skip


def framework_profile(text: str, sharding: str = "", notes: str = "") -> str:
    """The framework profile key (:data:`FRAMEWORK_PROFILES`) for a source's framework text.

    ``sharding`` and ``notes`` break ties where the framework text alone does not decide (e.g.
    "Megatron-LM + DeepSpeed ZeRO-3", or a Megatron row whose sharding column says ZeRO-3).
    Raises :class:`FrameworkNotMapped` for text no pattern recognises.
    """
    framework = (text or "").strip()
    for pattern, profile in _FRAMEWORK_PATTERNS:
        if framework and re.search(pattern, framework.lower()):
            # Megatron-LM run on DeepSpeed ZeRO (Narayanan's ZeRO-3 baseline): the sharding or
            # notes column says so where the framework text does not
            if profile == "megatron" and re.search(
                r"deepspeed|\bzero-?[123]\b", f"{sharding} {notes}".lower()
            ):
                return "deepspeed"
            return profile
    raise FrameworkNotMapped(
        f"framework {framework!r} is not mapped to a profile; known: "
        + ", ".join(FRAMEWORK_PROFILES)
        + " (Megatron-LM/Core/NeMo/Bridge; DeepSpeed ZeRO, Megatron-DeepSpeed; PyTorch "
        "FSDP/FSDP2/DDP, torchtitan, Composer/llm-foundry, fairseq/metaseq, fms-fsdp, Meta's "
        "Llama 3 stack)"
    )


def framework_mapping(published: PublishedData) -> pd.DataFrame:
    """How each framework text of the throughput rows was mapped: ``framework_text``,
    ``framework`` and ``rows`` (the number of throughput rows with that text)."""
    rows = published.throughput
    if rows.empty:
        return pd.DataFrame({"framework_text": [], "framework": [], "rows": []})
    return (
        rows.groupby(["framework_text", "framework"], sort=True).size().rename("rows").reset_index()
    )


def _behaviour_overrides(row: _Row, source: str) -> tuple[dict[str, object], list[str]]:
    """Overrides a row's source documents, with the citations for the assumptions column."""
    text = " ".join(row.text(k) for k in ("framework", "precision", "notes", "model"))
    out: dict[str, object] = {}
    cited: list[str] = []
    if "Narayanan" in source and "zero" not in row.text("framework").lower():
        out.update(overlap_grad_reduce=False, tp_comm_overlap=False)
        cited.append(_MEGATRON_2021)
    elif "Narayanan" in source:
        out["overlap_param_gather"] = False
        cited.append(_DEEPSPEED_2021)
    if "Shoeybi" in source:
        out.update(overlap_grad_reduce=False, tp_comm_overlap=False)
        cited.append(_MEGATRON_2019)
    if "torchtitan benchmarks" in source:
        if "float8" in text.lower():
            out["fp8_recipe"] = "tensorwise"
        if row.text("tp") and _int(row.r.get("tp")) not in (None, 1):
            out["tp_comm_overlap"] = "asynctp" in text.lower()
        out["fused_kernels"] = "torch.compile" in text
        if out:
            cited.append(_TORCHTITAN_2412)
    if "overlap-grad-reduce" in row.text("framework"):
        out["overlap_grad_reduce"] = True
    if "overlap-param-gather" in row.text("framework"):
        out["overlap_param_gather"] = True
    if "tp-comm-overlap" in row.text("framework"):
        out["tp_comm_overlap"] = True
    if "Llama 3 Herd" in source and (_int(row.r.get("cp")) or 1) > 1:
        out.update(cp_comm_type="all_gather", repeat_kv=False)
        cited.append(_LLAMA3_CONTEXT_PARALLEL)
    if "llm-foundry" in source:
        out["attention_kernel"] = "triton"
        cited.append(_LLM_FOUNDRY_ATTENTION)
    if "Megatron-Bridge" in source and row.text("precision").upper() == "FP8-CS":
        out["fp8_recipe"] = "current"
        cited.append("Megatron-Bridge: FP8-CS = Transformer Engine current scaling")
    return out, cited


def _moe(row: _Row) -> str | None:
    """A description of the row's mixture-of-experts layout, or None for a dense model."""
    notes = row.text("notes")
    ep = re.search(r"\bEP (\d+)", notes)
    experts = re.search(r"(\d+)(?: routed)? experts", notes)
    if re.search(r"\bMoE\b", notes) or experts or (ep and int(ep.group(1)) > 1):
        parts = [f"{experts.group(1)} experts" if experts else "",
                 f"expert parallel {ep.group(1)}" if ep else ""]  # fmt: skip
        return ", ".join(p for p in parts if p) or "experts"
    return None


class _Row:
    """One CSV row with typed accessors."""

    def __init__(self, line: int, record: dict) -> None:
        self.line = line
        """1-based line of the CSV file the record is on (the header is line 1)."""
        self.r = record

    def text(self, key: str) -> str:
        value = self.r.get(key)
        return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)

    def provenance(self) -> dict:
        return {
            "csv_row": self.line,
            "citation": self.text("source"),
            "url": self.text("url"),
            "table_or_figure": self.text("table_or_figure"),
            "model_name": self.text("model"),
            "published_metric": self.text("metric"),
        }


def _reject(row: _Row, reason: str) -> dict:
    return {**row.provenance(), "published_value_text": row.text("value"), "reason": reason}


def _shape(row: _Row) -> dict | None:
    """Model shape from the row's columns or, for named models, the catalogue."""
    for pattern, key in _MODEL_CATALOGUE:
        if re.search(pattern, row.text("model")):
            return {"model": key}
    fields = {name: _int(row.r.get(name)) for name in ("layers", "hidden", "heads", "vocab")}
    if any(v is None for v in fields.values()):
        return None
    ffn = _int(row.r.get("ffn")) or 4 * fields["hidden"]  # GPT/MPT: 4h (Narayanan's formula)
    name = row.text("model")
    gated = "llama" in name.lower()
    kv = 8 if "llama 3" in name.lower() else fields["heads"]
    return {
        "model": "",
        **fields,
        "kv_heads": kv,
        "ffn": ffn,
        "mlp": "swiglu" if gated else "gelu",
    }


def _throughput_row(row: _Row, parsed: ParsedValue) -> dict:
    source, metric = row.text("source"), row.text("metric")
    if "T5" in row.text("model"):
        raise _Rejected(
            "encoder-decoder model (T5): the simulator models decoder-only transformers"
        )
    if (moe := _moe(row)) is not None:
        raise _Rejected(
            f"mixture-of-experts model ({moe}): the simulator models dense transformers only"
        )
    problems = []  # every reason that applies, so a row is never rejected for half its story
    if parsed.kind == "lower_bound":
        problems.append(f"value {row.text('value')!r} is a lower bound, not a measured number")
    if parsed.kind == "range":
        problems.append(f"value {row.text('value')!r} is a range, not one measured number")
    num_gpus = _int(row.r.get("num_gpus"))
    if num_gpus is None and row.text("num_gpus"):
        problems.append(
            f"the source gives a range of GPU counts ({row.text('num_gpus')}), not the GPU "
            "count of one run"
        )
    elif num_gpus is None:
        problems.append("GPU count not stated by the source")
    if problems:
        raise _Rejected("; ".join(problems))
    assert num_gpus is not None
    value = parsed.number
    approximate = parsed.kind == "approximate"
    try:
        framework = framework_profile(row.text("framework"), row.text("sharding"),
                                      row.text("notes"))  # fmt: skip
    except FrameworkNotMapped as error:
        raise _Rejected(str(error)) from error
    shape = _shape(row)
    if shape is None:
        raise _Rejected("model shape (layers, hidden, heads) not published")
    gpu = _gpu_key(row.text("gpu"))
    if gpu is None:
        raise _Rejected(f"GPU {row.text('gpu')!r} is not in the catalogue")
    sharding = _sharding(row.text("sharding"))
    if sharding is None:
        raise _Rejected(f"sharding {row.text('sharding')!r} (CPU offload) is not modelled")
    tp = _int(row.r.get("tp"))
    pp = _int(row.r.get("pp"))
    notes = row.text("notes")
    if tp is None and "model-parallel size=96" in notes:
        tp, pp = 8, 12
    if tp is None and "model-parallel size=1" in notes:
        tp, pp = 1, 1
    if tp is None:
        if "TP/PP not stated" in notes:
            raise _Rejected("tensor/pipeline split not stated")
        tp = 1
    pp = pp or 1
    cp = _int(row.r.get("cp")) or 1
    gpn = _int(row.r.get("gpus_per_node")) or 8
    seq_len = _int(row.r.get("seq_len"))
    if seq_len is None and "torchtitan" in source:
        seq_len = 8192
    if seq_len is None:
        raise _Rejected("sequence length not published")
    micro = _int(row.r.get("micro_batch"))
    global_batch = _int(row.r.get("global_batch_seqs"))
    dp = data_parallel_degree(num_gpus, tp, pp, cp)
    if dp == 0:
        raise _Rejected(f"num_gpus {num_gpus} not divisible by tp*pp*cp")
    vpp = 1
    if "Llama 3 Herd" in source:
        micro, vpp = 1, 2
        per_dp = re.search(r"batch size/DP=(\d+)", notes)
        global_batch = dp * int(per_dp.group(1)) if per_dp else global_batch
    if "torchtitan benchmarks" in source:
        if pp > 1:
            # torchtitan@9dec370 splits the local batch into as many micro-batches as pipeline
            # stages unless --experimental.pipeline_parallel_microbatches is set (ASSUMPTIONS).
            local = micro or 1
            if local % pp:
                raise _Rejected(f"local batch {local} does not split into {pp} micro-batches")
            micro = local // pp
            if sharding == "fsdp":
                sharding = "zero2"  # reshard_after_forward=False under PP (ASSUMPTIONS)
            global_batch = local * dp
            vpp = 2 if "Interleaved" in notes else 1
        global_batch = global_batch or (micro or 1) * dp
    if "Shoeybi" in source:
        global_batch = global_batch or 8
        micro = global_batch // dp
    extra: list[str] = []
    precision = _precision(row.text("precision"))
    if "Megatron-Bridge" in source:
        vp = re.search(r"\bVP (\d+|n/a)", notes)
        if vp is None:
            raise _Rejected("Megatron-Bridge row without a 'VP' entry in notes")
        vpp = 1 if vp.group(1) == "n/a" else int(vp.group(1))
        ga = re.search(r"\bGA (\d+)", notes)
        derived = global_batch // ((micro or 1) * dp) if global_batch else None
        if ga and derived is not None and int(ga.group(1)) != derived:
            extra.append(f"printed GA {ga.group(1)} differs from GBS/(MBS x dp) = {derived}: "
                         "GBS and MBS used")  # fmt: skip
        if not row.text("precision"):
            if "precision not printed in the 25.09 table" not in notes:
                raise _Rejected("precision not printed")
            precision = "fp8"
            extra.append(
                "25.09 precision not printed: fp8, because the 25.11 table lists FP8-CS for the "
                "same configurations with about the same throughput (8B 14,079 vs 14,451 "
                "tokens/s/GPU) and the printed model FLOP/s (e.g. 405B 763 TFLOP/s/GPU) exceed "
                "96 % of the H100's BF16 MAMF (794.5), beyond reach in BF16; scaling recipe not "
                "stated"
            )
    if micro is None:
        micro = 1
    if global_batch is None:
        raise _Rejected("global batch not published")
    conventions = {
        "tokens_per_s_per_GPU": "direct",
        "step_time_ms": "direct",
        "achieved_TFLOPs_per_GPU": "megatron",
        "TFLOPs_per_GPU": "megatron" if "Shoeybi" in source else "model",
        "aggregate_PFLOPs": "megatron",
        "weak_scaling_efficiency_pct": "megatron",
        "MFU_pct": "model",
    }
    if metric not in conventions:
        raise _Rejected(f"metric {metric!r} is not a throughput or step-time figure")
    if metric == "aggregate_PFLOPs":
        value = value * 1e3 / num_gpus  # → TFLOP/s per GPU
    if metric == "weak_scaling_efficiency_pct":
        value = value / 100.0 * 39.0  # the published single-GPU baseline, 39 TFLOP/s
    if metric == "MFU_pct":
        raise _Rejected("MFU without a configuration the simulator can reproduce")
    nic = _nic_gbit_per_s_per_gpu(row.text("inter_node"), gpn)
    overrides, cited = _behaviour_overrides(row, source)
    if approximate:
        extra.append(f"value {row.text('value')!r} is approximate as printed: {value:g} used")
    return {
        **row.provenance(),
        **shape,
        "seq_len": seq_len,
        "global_batch": global_batch,
        "micro_batch": micro,
        "gpu": gpu,
        "num_gpus": num_gpus,
        "gpus_per_node": gpn,
        "system": "dgx2h-v100" if "Shoeybi" in source else "",
        "nic_gbit_per_s_per_gpu": nic if nic is not None else 0.0,
        "power_limit_w": _power_limit_w(row.text("gpu")),
        "tp": tp,
        "pp": pp,
        "cp": cp,
        "vpp": vpp,
        "sharding": sharding,
        "recompute": "full" if "Shoeybi" in source else _recompute(row.text("recompute")),
        "precision": precision,
        "framework": framework,
        "framework_text": row.text("framework"),
        **{name: overrides.get(name) for name in BEHAVIOUR_OVERRIDES},
        "published_value": value,
        "published_value_text": row.text("value"),
        "flop_convention": conventions[metric],
        "assumptions": "; ".join(a for a in (_assumption_for(source), *extra, *cited) if a),
    }


_COLLECTIVES: tuple[tuple[str, str], ...] = (
    (r"all_reduce", "allreduce"),
    (r"all_gather", "allgather"),
    (r"reduce_scatter", "reducescatter"),
    (r"alltoall", "alltoall"),
    (r"sendrecv", "sendrecv"),
)
_ALGORITHMS: tuple[tuple[str, str], ...] = (
    (r"ALGO=NVLSTree", "nvlstree"),
    (r"ALGO=NVLS\b", "nvls"),
    (r"ALGO=Ring", "ring"),
    (r"ALGO=Tree", "tree"),
)
_SIZE_UNITS = {"": None, "B": 1, "K": 2**10, "KB": 2**10, "KiB": 2**10, "M": 2**20, "MB": 2**20,
               "MiB": 2**20, "G": 2**30, "GB": 2**30, "GiB": 2**30}  # fmt: skip
#: Vendor bars without a message size: the ml-engineering README (network/README.md at commit
#: 744d01e1) matched GTC25's single-node 370 -> 480 GB/s bars "with a payload of about 8GiB".
_VENDOR_PEAK_BYTES = 8.0 * 2**30


def _collective_size(text: str, notes: str) -> tuple[float, str]:
    """Message size in bytes from a benchmark description, and the assumption made (if any).

    nccl-tests and every source here print sizes in binary units (``1M`` = ``1MiB`` = 2^20 B,
    ``1GB`` = 2^30 B, as nccl-tests' ``-b 1G`` means), so decimal and binary prefixes are read
    alike; an explicit byte count ``(1073741824 B)`` wins. A range (``4G-8G``: one value for a
    sweep) and a size-less description are rejected, except the GTC25 vendor peak bars, which
    get the ~8 GiB payload that reproduced them (:data:`_VENDOR_PEAK_BYTES`).
    """
    if m := re.search(r"\((\d+) B\)", text):
        return float(m.group(1)), ""
    if re.search(r"message \d+\s*[KMG]i?B?\s*-\s*\d+", text):
        raise _Rejected("one value for a range of message sizes (4G-8G sweep), not a size")
    if "message size not stated" in text:
        if "vendor" in notes or "bar value" in notes:
            return _VENDOR_PEAK_BYTES, "message size not stated: vendor peak bar taken at ~8 GiB"
        raise _Rejected("message size not stated")
    m = re.search(r"message (\d+(?:\.\d+)?)\s*(GiB|GB|G|MiB|MB|M|KiB|KB|K|B)?\b", text)
    if m is None or not m.group(2):
        raise _Rejected("message size not found (or without a unit) in the benchmark description")
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)], ""


def _collective_row(row: _Row) -> dict:
    """One nccl-tests row: the collective, forced algorithm, size, group, fabric and busbw.

    Rejected: in-network reduction (IB SHARP / CollNet), GPUs or systems outside the catalogue
    (GB200 NVL72, a PCIe-only panel), a GPU or GPU count not stated, a value that is a bound or
    range. Fernandez et al.'s scan gives no hardware: H100 SXM with 8 GPUs and 8 x 400 Gb/s
    InfiniBand NICs per node, inferred from its ~355 GB/s plateau (published README section 4.15).
    """
    text = row.text("model")
    notes = row.text("notes")
    source = row.text("source")
    inter = row.text("inter_node")
    intra = row.text("intra_node")
    gpu_text = row.text("gpu")
    assumptions: list[str] = []
    collective = next((k for p, k in _COLLECTIVES if re.search(p, text)), None)
    if collective is None:
        raise _Rejected(f"benchmark {text!r} is not a modelled collective")
    algorithm = next((k for p, k in _ALGORITHMS if re.search(p, text)), "")
    if re.search(r"(?<!no )SHARP", inter) or "CollNet" in text or "collnet" in notes.lower():
        raise _Rejected("in-network reduction (IB SHARP / CollNet) is not modelled")
    if "NVL72" in gpu_text or "NVL72" in inter:
        raise _Rejected("GB200 NVL72 (multi-node NVLink domain) is not in the catalogue")
    if "PCI" in intra and not gpu_text:
        raise _Rejected("PCIe-only node without a named GPU is not in the catalogue")
    size, assumption = _collective_size(text, notes)
    if assumption:
        assumptions.append(assumption)
    value_text = row.text("value").strip()
    if value_text.startswith((">", "<")):
        raise _Rejected(f"value {value_text!r} is a bound, not a measurement")
    value = _num(value_text.lstrip("~"))
    if not np.isfinite(value):
        raise _Rejected(f"value {value_text!r} is not a number")
    num_gpus = _int(row.r.get("num_gpus"))
    if num_gpus is None:
        raise _Rejected("GPU count not stated")
    if not gpu_text:
        raise _Rejected("GPU not stated")
    gpn = _int(row.r.get("gpus_per_node"))
    if gpn is None:
        raise _Rejected("GPUs per node not stated")
    if "Fernandez" in source and "not stated" in gpu_text:
        gpu = "h100-sxm-80gb"
        nic = 400.0
        assumptions.append("hardware not stated: H100 SXM, 8 GPUs and 8 x 400 Gb/s InfiniBand "
                           "NICs per node inferred from the ~355 GB/s plateau")  # fmt: skip
    else:
        gpu = _gpu_key(gpu_text)
        if gpu is None:
            raise _Rejected(f"GPU {gpu_text or 'not stated'!r} is not in the catalogue")
        nic = _nic_gbit_per_s_per_gpu(inter, gpn)
        if nic is None and (m := re.search(r"(\d+)\s*x\s*(\d+)\s*Gb", inter)):
            nic = float(m.group(1)) * float(m.group(2)) / gpn
        elif nic is None and (m := re.search(r"(\d+)\s*(?:mlx5 )?HCAs per node", inter)):
            nic = float(m.group(1)) * 400.0 / gpn
            assumptions.append("HCA speed not stated: 400 Gb/s NDR (H100/H200 generation)")
        elif nic is None and num_gpus > gpn:
            nic = 400.0
            assumptions.append("network not stated: 8 x 400 Gb/s per node (DGX H100)")
    nvls = "disabled" not in text.lower()
    if "bar label" in notes and "SHARP" not in intra:
        nvls = False  # the vendor's bars put NVLink SHARP in separate bars
        assumptions.append("bar without SHARP in its label: NVLS not used")
    if "rank count not printed" in notes:
        assumptions.append(f"{num_gpus} ranks assumed (2 x 8 setup)")
    return {
        **row.provenance(),
        "collective": collective,
        "algorithm": algorithm,
        "size_bytes": size,
        "num_gpus": num_gpus,
        "gpus_per_node": gpn,
        "gpu": gpu,
        "nic_gbit_per_s_per_gpu": nic if nic is not None else 0.0,
        "fabric": _fabric(inter),
        "nvls": nvls,
        "observed_busbw_gbytes_per_s": value,
        "assumptions": "; ".join(assumptions),
    }


class _Rejected(Exception):
    pass


def _power_anchor(row: _Row, parsed: ParsedValue) -> str:
    """The reject reason of a per-GPU power row: what it measures and what is missing."""
    what = {"power_w_per_gpu_avg": "average GPU power while training",
            "power_w_per_gpu_checkpointing": "GPU power while writing checkpoints"}  # fmt: skip
    missing = [
        label
        for label, absent in (
            ("GPU count", _int(row.r.get("num_gpus")) is None),
            ("GPUs per node", _int(row.r.get("gpus_per_node")) is None),
            ("model shape", _int(row.r.get("layers")) is None),
            ("parallel plan (TP/PP/DP, sharding)", not row.text("tp") and not row.text("sharding")),
            ("batch and sequence length", not row.text("global_batch_seqs")),
        )
        if absent
    ]
    kind = {"lower_bound": "lower bound ", "approximate": "approximately "}.get(parsed.kind, "")
    return (
        f"power anchor: {what[row.text('metric')]}, {kind}{parsed.number:g} W per GPU on "
        f"{row.text('gpu') or 'an unstated GPU'}; no configuration the simulator can reproduce "
        f"({', '.join(missing)} not stated)"
    )


def load_published(
    path: str | Path | None = None,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
) -> PublishedData:
    """Read, check and normalise the published measurements (default
    ``data/published/measurements.csv``).

    Every record is checked first (:func:`_read_records`, :func:`_check_record`): a malformed
    one raises :class:`~trainscale.errors.InputFileError` naming the file, line, column, value
    and what is allowed. Well-formed rows the simulator cannot represent go to the rejects.

    ``hardware`` (the physical limits a value is checked against) and ``models`` (the shapes
    the observed tokens/s are derived with) are the caller's catalogues.
    """
    path = Path(path) if path is not None else data_dir() / "published" / "measurements.csv"
    throughput, collectives, rejects = [], [], []
    for line, record in _read_records(path):
        parsed = _check_record(path, line, record, hardware)
        row = _Row(line, record)
        metric = row.text("metric")
        try:
            if metric == "busbw_GBps":
                collectives.append(_collective_row(row))
            elif metric in ("power_w_per_gpu_avg", "power_w_per_gpu_checkpointing"):
                raise _Rejected(_power_anchor(row, parsed))
            elif metric in ("power_note", "node_power_kW_max_observed",
                            "node_power_fraction_of_TDP_pct"):  # fmt: skip
                raise _Rejected(
                    "node-level or qualitative power: the simulator predicts GPU power only, "
                    "and the node's CPUs, NICs and fans are not modelled"
                )
            elif metric == "scaling_efficiency_pct":
                raise _Rejected("encoder-decoder model (T5): the simulator models decoder-only "
                                "transformers")  # fmt: skip
            else:
                throughput.append(_throughput_row(row, parsed))
        except _Rejected as reason:
            rejects.append(_reject(row, str(reason)))
    throughput_frame = pd.DataFrame(throughput)
    if not throughput_frame.empty:
        for name, allowed in BEHAVIOUR_OVERRIDES.items():
            column = throughput_frame[name]
            if allowed == (True, False):
                throughput_frame[name] = column.astype("boolean")
            else:  # text: None where the profile's default applies
                throughput_frame[name] = column.astype(object).where(column.notna(), None)
    throughput_frame["observed_tokens_per_s_per_gpu"] = _observed_with_shapes(
        throughput_frame, models
    )
    return PublishedData(
        throughput=throughput_frame,
        collectives=pd.DataFrame(collectives),
        rejects=pd.DataFrame(rejects),
    )


def _observed_with_shapes(throughput: pd.DataFrame, models: Mapping[str, ModelShape]) -> np.ndarray:
    """Observed tokens/s per GPU; catalogue models get their shape columns resolved first."""
    resolved = throughput.copy()
    for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "mlp"):
        values = []
        for _, row in resolved.iterrows():
            if row.get("model"):
                values.append(getattr(models[row["model"]], name))
            else:
                values.append(row[name])
        resolved[name] = values
    return observed_tokens_per_s_per_gpu(resolved)
