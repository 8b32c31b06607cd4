"""The simulator's free parameters and ``data/calibration.yaml``.

Every parameter is physical (an efficiency, a latency, a size, a power fraction) and has bounds.
The hardware physics is shared by all configurations; the five efficiencies that depend on the
software stack's kernels (GEMM, attention, memory-bound traffic, FP8 GEMMs, compute slowdown under
overlapped communication) carry one log offset per framework profile (``<name>_offset_<framework>``,
:data:`OFFSET_BASES`), with a prior towards 0, so a framework with few rows stays near the pool.
``trainscale calibrate`` (:mod:`trainscale.calibrate.fit`) fits the ``fitted`` ones to the published
measurements and writes them with their provenance; the others keep their sourced or estimated
value. ``calibration_id`` is a hash of the parameter values, so a
result row names exactly the parameters that produced it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from trainscale.errors import InputFileError
from trainscale.io.atomic import write_text_atomic
from trainscale.io.yaml import load_yaml
from trainscale.paths import data_dir
from trainscale.schema import FRAMEWORKS
from trainscale.sim.intervals import PredictionIntervals

__all__ = [
    "FRAMEWORK_OFFSET_PRIOR_SD",
    "OFFSET_BASES",
    "PARAMETERS",
    "Calibration",
    "ParameterSpec",
    "load_calibration",
    "parameters_at_bounds",
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
    """``throughput`` parameters are fitted to throughput rows, ``power`` ones to power claims."""
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


def _offset_specs() -> tuple[ParameterSpec, ...]:
    """One log offset per efficiency of :data:`OFFSET_BASES` and framework, prior 0 ± 0.1."""
    return tuple(
        ParameterSpec(
            name=f"{base}_offset_{framework}",
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
        for framework in FRAMEWORKS
    )


PARAMETERS: tuple[ParameterSpec, ...] = (
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
        default=0.4,
        lower=0.0,
        upper=1.0,
        unit="1",
        fitted=True,
        group="power",
        description="power above idle while only communication runs (exposed collectives), "
        "fraction of (TDP - idle); fitted to the paper's power claim",
    ),
    *_offset_specs(),
)

_SPECS = {spec.name: spec for spec in PARAMETERS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """Values of all simulator parameters (see :data:`PARAMETERS` for units and meaning)."""

    gemm_size_scale: float
    gemm_size_exponent: float
    attention_efficiency_scale: float
    elementwise_traffic_scale: float
    nvlink_efficiency: float
    nvls_efficiency: float
    nic_efficiency: float
    nccl_latency_scale: float
    congestion_per_doubling: float
    nccl_fill_chunks: float
    overlap_slowdown: float
    straggler_cv: float
    hbm_efficiency: float
    optimizer_bytes_per_param: float
    memory_overhead_gib: float
    memory_usable_fraction: float
    power_compute_frac: float
    power_memory_frac: float
    power_comm_frac: float
    fp8_gemm_scale: float
    gemm_efficiency_offset_megatron: float
    gemm_efficiency_offset_deepspeed: float
    gemm_efficiency_offset_pytorch: float
    attention_efficiency_offset_megatron: float
    attention_efficiency_offset_deepspeed: float
    attention_efficiency_offset_pytorch: float
    elementwise_traffic_offset_megatron: float
    elementwise_traffic_offset_deepspeed: float
    elementwise_traffic_offset_pytorch: float
    fp8_gemm_offset_megatron: float
    fp8_gemm_offset_deepspeed: float
    fp8_gemm_offset_pytorch: float
    overlap_slowdown_offset_megatron: float
    overlap_slowdown_offset_deepspeed: float
    overlap_slowdown_offset_pytorch: float
    intervals: PredictionIntervals | None = field(default=None, compare=False, repr=False)
    """The file's ``intervals`` block (:mod:`trainscale.sim.intervals`); not a parameter: it is
    left out of :meth:`as_dict` and of ``calibration_id``. None: predictions carry no interval."""

    @classmethod
    def defaults(cls) -> Calibration:
        """The priors: sourced or estimated values before any fit."""
        return cls(**{spec.name: spec.default for spec in PARAMETERS})

    def with_values(self, **values: float) -> Calibration:
        """Return a copy with some parameters changed."""
        return replace(self, **values)

    def framework_factors(self, base: str) -> np.ndarray:
        """``exp(offset)`` of efficiency ``base`` per framework, in the order of FRAMEWORKS."""
        return np.exp([getattr(self, f"{base}_offset_{fw}") for fw in FRAMEWORKS])

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self) if f.name != "intervals"}

    @property
    def calibration_id(self) -> str:
        """Content hash of the parameter values (12 hex digits)."""
        payload = json.dumps(
            {k: float(f"{v:.12g}") for k, v in sorted(self.as_dict().items())}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _parse(path: Path, data: dict) -> Calibration:
    parameters = data.get("parameters")
    if not isinstance(parameters, dict):
        raise InputFileError(path, "missing mapping 'parameters'")
    values = {}
    for spec in PARAMETERS:
        entry = parameters.get(spec.name)
        if entry is None:
            values[spec.name] = spec.default
            continue
        value = entry.get("value") if isinstance(entry, dict) else entry
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputFileError(path, f"parameters.{spec.name}.value: expected a number")
        if not spec.lower <= float(value) <= spec.upper:
            raise InputFileError(
                path,
                f"parameters.{spec.name}.value: {value} outside its bounds "
                f"[{spec.lower}, {spec.upper}]",
            )
        values[spec.name] = float(value)
    unknown = sorted(set(parameters) - set(_SPECS))
    if unknown:
        raise InputFileError(
            path, f"parameters: unknown key(s) {', '.join(unknown)}; valid: {', '.join(_SPECS)}"
        )
    return Calibration(**values, intervals=_parse_intervals(path, data.get("intervals")))


def _parse_intervals(path: Path, block: object) -> PredictionIntervals | None:
    if block is None:
        return None
    try:
        return PredictionIntervals.from_dict(block)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise InputFileError(
            path,
            f"intervals: malformed block ({type(error).__name__}: {error}); regenerate it "
            "with trainscale calibrate",
        ) from None


def parameters_at_bounds(calibration: Calibration) -> list[str]:
    """Names of the fitted parameters whose value sits on one of their bounds (such a value is
    held by the bound, not by the data)."""
    values = calibration.as_dict()
    return [p.name for p in PARAMETERS if p.fitted and values[p.name] in (p.lower, p.upper)]


@cache
def _load(path: Path) -> Calibration:
    if not path.is_file():
        return Calibration.defaults()
    return _parse(path, load_yaml(path))


def load_calibration(path: str | Path | None = None) -> Calibration:
    """Load ``data/calibration.yaml`` (the priors if the file does not exist yet)."""
    return _load(Path(path) if path is not None else data_dir() / "calibration.yaml")


def dump_calibration(calibration: Calibration, path: Path, provenance: dict) -> None:
    """Write a calibration file with each value, its bounds, meaning and the fit's provenance."""
    parameters = {}
    for spec in PARAMETERS:
        parameters[spec.name] = {
            "value": float(f"{getattr(calibration, spec.name):.6g}"),
            "lower": spec.lower,
            "upper": spec.upper,
            "prior": spec.default,
            "unit": spec.unit,
            "fitted": spec.fitted,
            "description": spec.description,
        }
    document = {
        "calibration_id": calibration.calibration_id,
        **provenance,
        "parameters": parameters,
    }
    if calibration.intervals is not None:
        document["intervals"] = calibration.intervals.as_dict()
    text = yaml.safe_dump(document, sort_keys=False, width=100, allow_unicode=False)
    write_text_atomic(path, text)
