"""The simulator's free parameters: each one's prior, bounds, unit and meaning.

Every parameter is physical (an efficiency, a latency, a size, a power fraction) and has bounds.
:data:`SHARED_PARAMETERS` are shared by all configurations; the five efficiencies that depend on
the software stack's kernels (GEMM, attention, memory-bound traffic, FP8 GEMMs, compute slowdown
under overlapped communication) carry one log offset per framework profile
(:data:`OFFSET_BASES`; flat name ``<base>_offset_<framework>``, :func:`offset_name`), with a
prior towards 0, so a framework with few rows stays near the pool. The offsets are generated from
the framework list the caller passes (the profile keys of its catalogue,
``Catalogue.framework_keys``): :func:`parameters` and :func:`offset_specs` take it, and
:func:`parameter_spec` knows any flat name. No list of frameworks is kept here. The values live in
:class:`trainscale.sim.calibration.Calibration`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "FRAMEWORK_OFFSET_PRIOR_SD",
    "OFFSET_BASES",
    "SHARED_PARAMETERS",
    "ParameterSpec",
    "offset_name",
    "offset_specs",
    "parameter_spec",
    "parameters",
    "split_offset_name",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParameterSpec:
    """Metadata of one parameter: default (prior), bounds, unit and meaning."""

    name: str
    default: float
    lower: float
    upper: float
    unit: str
    fitted: bool
    """Fitted by ``trainscale calibrate`` (True) or fixed at its sourced/estimated value."""
    group: str
    """``throughput`` parameters are fitted to throughput rows; ``power`` ones are set from their
    sources (a user's power logs refit them: ``trainscale calibrate --measurements``)."""
    description: str
    prior_sd: float | None = None
    """Standard deviation of the fit's Gaussian prior; None: half the bound range."""


#: Prior standard deviation of every per-framework offset (log units, ~10 %): a framework with few
#: published rows stays near the shared value (chosen before any fit with offsets was run).
FRAMEWORK_OFFSET_PRIOR_SD = 0.1
#: The efficiencies that carry a per-framework offset, as ``<name>_offset_<framework>``.
OFFSET_BASES = (
    "gemm_efficiency",
    "attention_efficiency",
    "elementwise_traffic",
    "fp8_gemm",
    "overlap_slowdown",
)

_OFFSET_MEANING = {
    "gemm_efficiency": ("the GEMM efficiency (catalogued MAMF fraction): its GEMM kernels and "
                        "launch configuration", -0.4, 0.15),
    "attention_efficiency": ("the FlashAttention efficiency: its attention kernel "
                             "(FlashAttention 2/3, cuDNN fused attention, SDPA)", -0.4, 0.4),
    "elementwise_traffic": ("the HBM traffic of memory-bound kernels: its fused normalisation, "
                            "rotary and activation kernels", -0.4, 0.4),
    "fp8_gemm": ("the FP8 GEMM efficiency, on top of its GEMM offset: its FP8 kernels",
                 -0.4, 0.4),
    "overlap_slowdown": ("the compute slowdown under overlapped communication: the SMs its "
                         "communication kernels take", -0.4, 0.4),
}  # fmt: skip


def offset_name(base: str, framework: str) -> str:
    """The flat name of framework ``framework``'s log offset on efficiency ``base`` (one of
    :data:`OFFSET_BASES`): ``<base>_offset_<framework>``, as ``data/calibration.yaml`` and the
    fit name it."""
    return f"{base}_offset_{framework}"


def split_offset_name(name: str) -> tuple[str, str] | None:
    """``(base, framework)`` of a flat offset name (:func:`offset_name`), or None for a name
    that is not one (the framework is not checked against any list)."""
    for base in OFFSET_BASES:
        prefix = f"{base}_offset_"
        if name.startswith(prefix) and len(name) > len(prefix):
            return base, name[len(prefix) :]
    return None


def offset_specs(frameworks: Sequence[str]) -> tuple[ParameterSpec, ...]:
    """One log offset per efficiency of :data:`OFFSET_BASES` and framework of ``frameworks``
    (the caller's framework list, base by base), prior 0 ± 0.1; a profile added to a catalogue's
    ``frameworks.yaml`` gets its offsets here, with no code edit."""
    return tuple(
        ParameterSpec(
            name=offset_name(base, framework),
            default=0.0,
            lower=lower,
            upper=upper,
            unit="1",
            fitted=True,
            group="throughput",
            description=f"{framework}'s log offset on {meaning}; exp(offset) multiplies the "
            "shared value",
            prior_sd=FRAMEWORK_OFFSET_PRIOR_SD,
        )
        for base, (meaning, lower, upper) in _OFFSET_MEANING.items()
        for framework in frameworks
    )


SHARED_PARAMETERS: tuple[ParameterSpec, ...] = (
    ParameterSpec(
        name="gemm_size_scale",
        default=1.0,
        lower=0.25,
        upper=4.0,
        unit="1",
        fitted=True,
        group="throughput",
        description="multiplies each GPU's catalogued half-efficiency GEMM dimension d0 in "
        "eta(d) = eta_max / (1 + (d0/d)^a) (tile and wave quantisation of small GEMMs)",
    ),
    ParameterSpec(
        name="gemm_size_exponent",
        default=1.0,
        lower=0.5,
        upper=3.0,
        unit="1",
        fitted=True,
        group="throughput",
        description="sharpness a of the GEMM size curve eta(d) = eta_max / (1 + (d0/d)^a): 1 is "
        "the reference notes' d/(d + d0); larger values confine the loss to small GEMMs",
    ),
    ParameterSpec(
        name="attention_efficiency_scale",
        default=1.0,
        lower=0.2,
        upper=1.3,
        unit="1",
        fitted=True,
        group="throughput",
        description="multiplies each GPU's catalogued best FlashAttention efficiency (typical "
        "head sizes and sequence lengths reach less than the best case; causal blocks are skipped, "
        "the backward executes 2.5x the forward FLOPs)",
    ),
    ParameterSpec(
        name="fp8_gemm_scale",
        default=1.0,
        lower=0.6,
        upper=1.35,
        unit="1",
        fitted=True,
        group="throughput",
        description="multiplies each GPU's catalogued FP8 GEMM efficiency (MAMF fraction of the "
        "FP8 peak): what FP8 linears reach inside training, shared by all frameworks",
    ),
    ParameterSpec(
        name="elementwise_traffic_scale",
        default=1.0,
        lower=0.3,
        upper=5.0,
        unit="1",
        fitted=True,
        group="throughput",
        description="multiplies the counted HBM traffic of memory-bound kernels (norms, residual "
        "adds, activations, rotary, softmax/cross-entropy, casts): unfused kernels move more",
    ),
    ParameterSpec(
        name="nvlink_efficiency",
        default=0.8,
        lower=0.6,
        upper=0.95,
        unit="1",
        fitted=True,
        group="throughput",
        description="NCCL ring bus bandwidth as a fraction of NVLink line rate per direction "
        "(H100: ~370 of 450 GB/s)",
    ),
    ParameterSpec(
        name="nvls_efficiency",
        default=0.61,
        lower=0.4,
        upper=0.9,
        unit="1",
        fitted=True,
        group="throughput",
        description="NVLink SHARP AllReduce algorithm bandwidth as a fraction of NVLink line rate "
        "per direction (H100: ~275 of 450 GB/s)",
    ),
    ParameterSpec(
        name="nic_efficiency",
        default=0.93,
        lower=0.6,
        upper=0.98,
        unit="1",
        fitted=True,
        group="throughput",
        description="bandwidth NCCL reaches per scale-out NIC as a fraction of line rate on "
        "InfiniBand (46-48 of 50 GB/s on NDR); other fabrics scale it by their factor",
    ),
    ParameterSpec(
        name="nccl_latency_scale",
        default=1.0,
        lower=0.1,
        upper=3.0,
        unit="1",
        fitted=True,
        group="throughput",
        description="multiplies NCCL's tuning-table latencies (base and per-hop)",
    ),
    ParameterSpec(
        name="congestion_per_doubling",
        default=0.02,
        lower=0.0,
        upper=0.06,
        unit="1",
        fitted=True,
        group="throughput",
        description="loss of NIC bandwidth per doubling of the nodes a collective spans, "
        "eta(N) = eta * (1 - c log2 N) [E: the reference notes propose c = 0.02 for non-ideal "
        "routing and congestion]",
    ),
    ParameterSpec(
        name="nccl_fill_chunks",
        default=1.0,
        lower=0.0,
        upper=8.0,
        unit="chunks",
        fitted=True,
        group="throughput",
        description="chunks each hop of a tree or NVLSTree AllReduce pipeline passes before the "
        "next hop streams (pipeline fill: depth x chunks x chunk / per-channel bandwidth); 1 is "
        "the textbook (k + D - 1) pipeline, NCCL_STEPS = 8 buffer slots per connection the most "
        "one hop can hold (NVIDIA/nccl src/include/device.h, commit 5067397c)",
    ),
    ParameterSpec(
        name="overlap_slowdown",
        default=0.1,
        lower=0.0,
        upper=0.4,
        unit="1",
        fitted=True,
        group="throughput",
        description="fractional slowdown of compute while a collective runs beside it (NCCL "
        "kernels take SMs and HBM bandwidth)",
    ),
    ParameterSpec(
        name="straggler_cv",
        default=0.02,
        lower=0.0,
        upper=0.1,
        unit="1",
        fitted=True,
        group="throughput",
        description="coefficient of variation of one GPU's compute time per step (clocks, "
        "thermals, OS noise); a synchronous step waits for the slowest of N GPUs, on average "
        "cv * E[max of N standard normals] longer (Blom's approximation); the wait is spent in "
        "collectives, so it counts as exposed communication",
    ),
    ParameterSpec(
        name="hbm_efficiency",
        default=0.8,
        lower=0.5,
        upper=0.95,
        unit="1",
        fitted=False,
        group="throughput",
        description="achieved fraction of HBM bandwidth by memory-bound kernels [E, reference "
        "notes section 4.3]",
    ),
    ParameterSpec(
        name="optimizer_bytes_per_param",
        default=32.0,
        lower=16.0,
        upper=64.0,
        unit="B",
        fitted=False,
        group="throughput",
        description="HBM bytes moved per locally held parameter by the AdamW step (fp32 master, "
        "m, v read and written, gradient read, bf16 copy written, norm for clipping)",
    ),
    ParameterSpec(
        name="moe_gemm_half_rows",
        default=128.0,
        lower=8.0,
        upper=4096.0,
        unit="rows",
        fitted=True,
        group="moe",
        description="rows per expert at which a grouped expert GEMM runs at half the efficiency "
        "of a dense GEMM of its shape: efficiency x r / (r + r_half) for r rows per expert "
        "(each expert's rows are padded to the kernel's M tile and its weights are read for "
        "few rows); prior one M tile, 128 rows, of the Hopper grouped-GEMM kernels (CUTLASS "
        "grouped GEMM in Transformer Engine GroupedLinear and Megatron-Core --moe-grouped-gemm)",
    ),
    ParameterSpec(
        name="alltoall_efficiency",
        default=1.0,
        lower=0.25,
        upper=1.5,
        unit="1",
        fitted=True,
        group="moe",
        description="bandwidth of expert-parallel token dispatch and combine relative to what "
        "the ring collectives achieve on the same links (NVLink, NICs); prior 1: DeepEP's normal "
        "kernels reach 153-158 GB/s of H800 NVLink's ~160 GB/s and 43-58 GB/s of a CX7 NIC's "
        "~50 GB/s (https://github.com/deepseek-ai/DeepEP README, normal kernels), ring-class "
        "efficiency",
    ),
    ParameterSpec(
        name="expert_load_cv",
        default=0.2,
        lower=0.0,
        upper=2.0,
        unit="1",
        fitted=True,
        group="moe",
        description="coefficient of variation of the tokens a trained router sends to each "
        "expert in one micro-batch (dropless routing): an expert-parallel rank holding E/ep "
        "experts carries cv/sqrt(E/ep) of relative spread, and the busiest of ep ranks sets the "
        "pace, 1 + spread x E[max of ep standard normals] (Blom); [E] estimate of the load "
        "violations under auxiliary-loss balancing (Wang et al. 2024, arXiv 2408.15664, "
        "MaxVio), fitted by the MoE stage",
    ),
    ParameterSpec(
        name="memory_overhead_gib",
        default=4.0,
        lower=1.0,
        upper=10.0,
        unit="GiB",
        fitted=False,
        group="memory",
        description="CUDA context, NCCL buffers and allocator slack per GPU [E, 2-6 GB]",
    ),
    ParameterSpec(
        name="memory_usable_fraction",
        default=0.95,
        lower=0.8,
        upper=1.0,
        unit="1",
        fitted=False,
        group="memory",
        description="fraction of HBM a configuration may use and still fit",
    ),
    ParameterSpec(
        name="power_compute_frac",
        default=0.875,
        lower=0.5,
        upper=1.0,
        unit="1",
        fitted=False,
        group="power",
        description="power above idle during GEMM-bound compute, as a fraction of (TDP - idle); "
        "0.85-1.0 x TDP on H100 [E, reference notes section 5.3]",
    ),
    ParameterSpec(
        name="power_memory_frac",
        default=0.45,
        lower=0.2,
        upper=0.9,
        unit="1",
        fitted=False,
        group="power",
        description="power above idle during memory-bound kernels, fraction of (TDP - idle); "
        "0.5-0.6 x TDP [E]",
    ),
    ParameterSpec(
        name="power_comm_frac",
        default=0.0,
        lower=0.0,
        upper=1.0,
        unit="1",
        fitted=False,
        group="power",
        description="power above idle while only communication runs (exposed collectives), "
        "fraction of (TDP - idle): 0, the phase draws the idle power with a context held "
        "(idle_w). Production telemetry of DGX-H100 racks shows GPUs near TDP while computing "
        "and near idle in the communication-heavy phase (Choukse et al. 2025, Power "
        "Stabilization for AI Training Datacenters, arXiv 2508.14318, section 2 and figure 1; "
        "reference notes [S63, S64]); NCCL kernels use no tensor cores and a few SMs. Set, not "
        "fitted: the paper's power claim is checked against it, not fitted to it",
    ),
)
"""The parameters every framework shares (the hardware physics and the shared efficiencies)."""
_SHARED = {spec.name: spec for spec in SHARED_PARAMETERS}


def parameters(frameworks: Sequence[str]) -> tuple[ParameterSpec, ...]:
    """Every parameter under the framework list ``frameworks`` (the profile keys of the caller's
    catalogue, in its order): :data:`SHARED_PARAMETERS`, then the offsets of
    :data:`OFFSET_BASES` × ``frameworks`` (base by base), the order of ``data/calibration.yaml``."""
    return (*SHARED_PARAMETERS, *offset_specs(frameworks))


def parameter_spec(name: str) -> ParameterSpec:
    """The spec of the parameter with flat name ``name``: a shared one, or the offset
    ``<base>_offset_<framework>`` of any framework (:func:`split_offset_name`)."""
    if name in _SHARED:
        return _SHARED[name]
    split = split_offset_name(name)
    if split is None:
        raise KeyError(f"unknown calibration parameter {name!r}")
    return offset_specs((split[1],))[OFFSET_BASES.index(split[0])]
