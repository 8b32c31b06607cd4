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

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import InputFileError
from trainscale.model.flops import model_flops_per_token
from trainscale.paths import data_dir

__all__ = [
    "ASSUMPTIONS",
    "PublishedData",
    "flops_per_token",
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
    "torchtitan benchmarks": "H100 96GB HBM2e at 500 W predicted as a 700 W H100 SXM (the power "
    "cap is not modelled); sequence length 8192 (torchtitan's llama3 default) where not printed; "
    "with pipeline parallelism the local batch is split into micro-batches of 1; interleaved "
    "1F1B with 2 stages per rank; torch.compile and AsyncTP are not modelled",
    "torchtitan docs": "'selective layer' and 'selective op' activation checkpointing = selective",
    "PyTorch/IBM blog: Maximizing": "inter-node bandwidth per node divided by 8 GPUs; 'selective "
    "every n blocks' = selective",
    "Shoeybi": "DGX-2H: 16 GPUs per node, 8 x 100 Gb/s per node; activation checkpointing (the "
    "paper's FLOP count includes the recomputed forward); weak-scaling efficiencies "
    "converted to TFLOP/s per GPU with the published 39 TFLOP/s single-GPU baseline; micro-batch = "
    "the printed batch per model-parallel group",
    "llm-foundry": "RoCE 1600 Gb/s per node = 200 Gb/s per GPU; H100 network not printed: the "
    "DGX H100 default (400 Gb/s per GPU)",
}

_GPU_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"H200", "h200-sxm-141gb"),
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
)


@dataclass(frozen=True, slots=True)
class PublishedData:
    """The three destinations of the published rows."""

    throughput: pd.DataFrame
    """Configuration columns, provenance, ``published_metric``, ``published_value``,
    ``observed_tokens_per_s_per_gpu``, ``flop_convention``, ``assumptions``, ``csv_row``."""
    collectives: pd.DataFrame
    """``csv_row``, provenance, ``collective`` (allreduce, allgather, reducescatter, alltoall,
    sendrecv), ``algorithm`` ("" = NCCL's choice, or the forced nvlstree/nvls/ring/tree),
    ``size_bytes``, ``num_gpus``, ``gpus_per_node``, ``gpu``, ``nic_gbps_per_gpu``, ``fabric``,
    ``nvls`` (False where NVLS was disabled), ``observed_busbw_gbps``, ``assumptions``."""
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


def _nic_gbps_per_gpu(text: str, gpus_per_node: int) -> float | None:
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

    - ``model``: trainscale's MFU convention (:mod:`trainscale.model.flops`), used by Llama 3
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


class _Row:
    """One CSV row with typed accessors."""

    def __init__(self, index: int, record: dict) -> None:
        self.index = index
        self.r = record

    def text(self, key: str) -> str:
        value = self.r.get(key)
        return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)

    def provenance(self) -> dict:
        return {
            "csv_row": self.index + 2,  # 1-based, after the header
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


def _throughput_row(row: _Row) -> dict:
    source, metric = row.text("source"), row.text("metric")
    if "T5" in row.text("model"):
        raise _Rejected(
            "encoder-decoder model (T5): the simulator models decoder-only transformers"
        )
    num_gpus = _int(row.r.get("num_gpus"))
    if num_gpus is None:
        raise _Rejected(f"GPU count not stated ({row.text('num_gpus') or 'empty'})")
    value = _num(row.r.get("value"))
    if not np.isfinite(value):
        raise _Rejected(f"value {row.text('value')!r} is a bound or range, not a number")
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
    dp = num_gpus // (tp * pp * cp) if num_gpus % (tp * pp * cp) == 0 else None
    if dp is None:
        raise _Rejected(f"num_gpus {num_gpus} not divisible by tp*pp*cp")
    vpp = 1
    if "Llama 3 Herd" in source:
        micro, vpp = 1, 2
        per_dp = re.search(r"batch size/DP=(\d+)", notes)
        global_batch = dp * int(per_dp.group(1)) if per_dp else global_batch
    if "torchtitan benchmarks" in source:
        if pp > 1:
            local = micro or 1
            micro = 1
            global_batch = local * dp
            vpp = 2 if "Interleaved" in notes else 1
        global_batch = global_batch or (micro or 1) * dp
    if "Shoeybi" in source:
        global_batch = global_batch or 8
        micro = global_batch // dp
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
    nic = _nic_gbps_per_gpu(row.text("inter_node"), gpn)
    return {
        **row.provenance(),
        **shape,
        "seq_len": seq_len,
        "global_batch": global_batch,
        "micro_batch": micro,
        "gpu": gpu,
        "num_gpus": num_gpus,
        "gpus_per_node": gpn,
        "nic_gbps_per_gpu": nic if nic is not None else 0.0,
        "tp": tp,
        "pp": pp,
        "cp": cp,
        "vpp": vpp,
        "sharding": sharding,
        "recompute": "full" if "Shoeybi" in source else _recompute(row.text("recompute")),
        "precision": _precision(row.text("precision")),
        "published_value": value,
        "published_value_text": row.text("value"),
        "flop_convention": conventions[metric],
        "assumptions": _assumption_for(source),
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
        nic = _nic_gbps_per_gpu(inter, gpn)
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
        "nic_gbps_per_gpu": nic if nic is not None else 0.0,
        "fabric": _fabric(inter),
        "nvls": nvls,
        "observed_busbw_gbps": value,
        "assumptions": "; ".join(assumptions),
    }


class _Rejected(Exception):
    pass


def load_published(path: str | Path | None = None) -> PublishedData:
    """Read and normalise the published measurements (default ``data/published/``)."""
    path = Path(path) if path is not None else data_dir() / "published" / "measurements.csv"
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError) as error:
        raise InputFileError(path, f"cannot read as CSV: {error}") from error
    required = {"source", "url", "model", "gpu", "num_gpus", "metric", "value", "notes"}
    missing = required - set(frame.columns)
    if missing:
        raise InputFileError(path, f"missing column(s) {', '.join(sorted(missing))}")
    throughput, collectives, rejects = [], [], []
    for index, record in enumerate(frame.to_dict(orient="records")):
        row = _Row(index, record)
        metric = row.text("metric")
        try:
            if metric == "busbw_GBps":
                collectives.append(_collective_row(row))
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
                throughput.append(_throughput_row(row))
        except _Rejected as reason:
            rejects.append(_reject(row, str(reason)))
    throughput_frame = pd.DataFrame(throughput)
    throughput_frame["observed_tokens_per_s_per_gpu"] = _observed_with_shapes(throughput_frame)
    return PublishedData(
        throughput=throughput_frame,
        collectives=pd.DataFrame(collectives),
        rejects=pd.DataFrame(rejects),
    )


def _observed_with_shapes(throughput: pd.DataFrame) -> np.ndarray:
    """Observed tokens/s per GPU; catalogue models get their shape columns resolved first."""
    from trainscale.model.shape import load_models

    models = load_models()
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
