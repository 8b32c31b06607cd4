"""The configuration table: one row per training setup."""

from __future__ import annotations

from trainscale.schema import choices as allowed
from trainscale.schema.column import Column, _c

MODEL_SHAPE_COLUMNS: tuple[Column, ...] = (
    _c("layers", "int64", "1", "transformer blocks"),
    _c("hidden", "int64", "1", "model width h"),
    _c("heads", "int64", "1", "attention (query) heads"),
    _c("kv_heads", "int64", "1", "key/value heads (grouped-query attention; = heads for MHA)"),
    _c("ffn", "int64", "1", "MLP inner size"),
    _c("vocab", "int64", "1", "vocabulary size (LM head rows)"),
    _c(
        "mlp", "string", "1", "MLP kind: swiglu (3 matrices) or gelu (2)", choices=allowed.MLP_KINDS
    ),
)

CONFIGURATION_COLUMNS: tuple[Column, ...] = (
    _c(
        "model",
        "string",
        "1",
        "model catalogue key (data/models.yaml); explicit shape columns override its values",
        default="",
    ),
    *MODEL_SHAPE_COLUMNS,
    _c("seq_len", "int64", "tokens", "tokens per sequence"),
    _c("global_batch", "int64", "sequences", "sequences per optimizer step"),
    _c("micro_batch", "int64", "sequences", "sequences per GPU per micro-step"),
    _c("gpu", "string", "1", "GPU catalogue key (data/hardware.yaml)"),
    _c("num_gpus", "int64", "1", "GPUs in the job"),
    _c(
        "gpus_per_node",
        "int64",
        "1",
        "GPUs per node (default: the GPU's default system)",
        default=0,
    ),
    _c(
        "nic_gbit_per_s_per_gpu",
        "float64",
        "Gb/s",
        "scale-out NIC line rate per GPU in gigabits/s (default: the GPU's default system)",
        default=0.0,
    ),
    _c(
        "power_limit_w",
        "float64",
        "W",
        "GPU board power limit (nvidia-smi -pl); below the TDP the clock drops during GEMM-bound "
        "compute (default: the GPU's TDP, no limit)",
        default=0.0,
    ),
    _c("tp", "int64", "1", "tensor-parallel degree"),
    _c("pp", "int64", "1", "pipeline-parallel degree"),
    _c("cp", "int64", "1", "context-parallel degree", default=1),
    _c(
        "vpp",
        "int64",
        "1",
        "virtual pipeline stages per rank (interleaved 1F1B when > 1)",
        default=1,
    ),
    _c(
        "sharding",
        "string",
        "1",
        "data-parallel sharding: ddp, zero1, zero2, fsdp (full shard), "
        "hsdp (shard within a node, replicate across nodes)",
        choices=allowed.SHARDINGS,
    ),
    _c("recompute", "string", "1", "activation recomputation", choices=allowed.RECOMPUTE_MODES),
    _c(
        "precision",
        "string",
        "1",
        "GEMM precision (bf16 mixed precision or fp8 linears)",
        choices=allowed.PRECISIONS,
    ),
    _c(
        "sequence_parallel",
        "bool",
        "1",
        "Megatron sequence parallelism (default: tp > 1)",
        default=None,
    ),
    _c(
        "system",
        "string",
        "1",
        "system catalogue key (data/hardware.yaml systems: node size, NICs, fabric); default: the "
        "GPU's default system; gpus_per_node and nic_gbit_per_s_per_gpu override it",
        default="",
    ),
    _c(
        "framework",
        "string",
        "1",
        "software stack profile (data/frameworks.yaml): megatron (Megatron-LM/Core, NeMo, "
        "Megatron-Bridge), deepspeed (DeepSpeed ZeRO, Megatron-DeepSpeed), pytorch (DDP, FSDP, "
        "FSDP2, torchtitan, Composer); default pytorch",
        choices=allowed.FRAMEWORKS,
        default=allowed.DEFAULT_FRAMEWORK,
    ),
    _c(
        "overlap_grad_reduce",
        "bool",
        "1",
        "data-parallel gradient reduction overlapped with the backward pass (Megatron "
        "--overlap-grad-reduce, DeepSpeed overlap_comm); default: the framework profile's",
        default=None,
    ),
    _c(
        "overlap_param_gather",
        "bool",
        "1",
        "parameter all-gathers prefetched under compute (Megatron --overlap-param-gather, FSDP "
        "prefetch, ZeRO-3 prefetch); default: the framework profile's",
        default=None,
    ),
    _c(
        "tp_comm_overlap",
        "bool",
        "1",
        "tensor-parallel communication pipelined with its GEMMs (Megatron --tp-comm-overlap, "
        "torchtitan AsyncTP); default: the framework profile's",
        default=None,
    ),
    _c(
        "fused_kernels",
        "bool",
        "1",
        "normalisation, rotary and SwiGLU kernels fused (Transformer Engine LayerNormLinear/"
        "LayerNormMLP with Megatron's rope and bias-SwiGLU fusions, or torch.compile) rather "
        "than one eager kernel per operation; default: the framework profile's",
        default=None,
    ),
    _c(
        "shard_granularity",
        "string",
        "1",
        "sharded (fsdp/hsdp) all-gathers per layer (FSDP flat parameter) or per parameter tensor "
        "(DeepSpeed ZeRO-3); default: the framework profile's",
        choices=allowed.SHARD_GRANULARITIES,
        default="",
    ),
    _c(
        "attention_kernel",
        "string",
        "1",
        "attention kernel: flash2 (FlashAttention-2, PyTorch SDPA), fused (cuDNN fused "
        "attention / FlashAttention-3, Transformer Engine) or triton (FlashAttention in Triton, "
        "llm-foundry's attn_impl: triton); default: the framework profile's",
        choices=allowed.ATTENTION_KERNELS,
        default="",
    ),
    _c(
        "fp8_recipe",
        "string",
        "1",
        "FP8 scaling: delayed (Transformer Engine DelayedScaling), current (TE current scaling), "
        "tensorwise or rowwise (torchao float8); default: the framework profile's",
        choices=allowed.FP8_RECIPES,
        default="",
    ),
    _c(
        "repeat_kv",
        "bool",
        "1",
        "the model repeats K/V to the query heads before the attention kernel (torchtitan's "
        "Llama: repeat_kv), so context parallelism moves heads / kv_heads times the K/V bytes; "
        "default: the framework profile's",
        default=None,
    ),
    _c(
        "cp_comm_type",
        "string",
        "1",
        "context-parallel K/V exchange: p2p (a ring of sends, each hidden behind one chunk's "
        "attention; Transformer Engine cp_comm_type p2p) or all_gather (one AllGather hidden "
        "behind the local chunk only; PyTorch's allgather rotate method, Llama 3); default: the "
        "framework profile's",
        choices=allowed.CP_COMM_TYPES,
        default="",
    ),
)
