"""What the reproduced paper states, and the constants of the paper setup: values only.

Fernandez et al. (arXiv 2411.13055) publish the numbers below; the paper setup that reproduces
them (sequence length, global batch, micro-batch, framework, systems, GPU counts) is fixed by
rule, not by fit, and explained in :mod:`trainscale.paper.setup`, whose functions simulate it.
:data:`CLAIMS` pairs each published number with the tolerance it is checked against.

This module imports no simulator code, so the figures and tables (which never run the simulator,
an import-linter contract in ``pyproject.toml``) can quote the paper's numbers from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = [
    "ASSUMPTIONS",
    "CLAIMS",
    "GLOBAL_BATCH_ALTERNATIVES",
    "PAPER_BEST_DEGREE",
    "PAPER_CLAIM_FROM",
    "PAPER_CLAIM_TO",
    "PAPER_FRAMEWORK",
    "PAPER_GLOBAL_BATCH",
    "PAPER_GPU_COUNTS",
    "PAPER_MFU_GPUS",
    "PAPER_MFU_PCT",
    "PAPER_MICRO_BATCH",
    "PAPER_POWER_DROP_PCT",
    "PAPER_SEQ_LEN",
    "PAPER_SYSTEMS",
    "PAPER_THROUGHPUT_DROP_PCT",
    "PREDICTED",
    "REPRODUCED",
    "Claim",
]

# The paper setup (trainscale's rules; see trainscale.paper.setup).
PAPER_SEQ_LEN = 4096
PAPER_GLOBAL_BATCH = 2048
PAPER_MICRO_BATCH = 2
PAPER_GPU_COUNTS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
PAPER_MFU_GPUS = 128
PAPER_CLAIM_FROM, PAPER_CLAIM_TO = 128, 2048
PAPER_FRAMEWORK = "pytorch"
"""The paper's software stack: PyTorch FSDP (see :mod:`trainscale.paper.setup`)."""
PAPER_SYSTEMS = {"h100-sxm-80gb": "fernandez-h100"}
"""The paper's own cluster where its network is measured; other GPUs use their default system."""

#: Global batches (sequences) the claims are also reproduced at, the paper not publishing its
#: own: the next powers of two that split across 128 to 2,048 GPUs (1,024, Llama-2's own 4M
#: tokens, cannot give each of 2,048 GPUs a sequence).
GLOBAL_BATCH_ALTERNATIVES: tuple[int, ...] = (4096, 8192)

#: The assumptions of the paper setup a reproduced value can rest on, by name (column
#: ``assumptions`` of the claims table joins those a claim lists in :attr:`Claim.assumptions`).
#: Each is explained in :mod:`trainscale.paper.setup`.
ASSUMPTIONS: dict[str, str] = {
    "global_batch": f"global batch {PAPER_GLOBAL_BATCH:,} sequences (not published by the paper)",
    "seq_len": f"sequence length {PAPER_SEQ_LEN:,} (not published by the paper)",
    "micro_batch": f"micro-batch {PAPER_MICRO_BATCH} per GPU, or the local batch if smaller "
    "(PyTorch/IBM FSDP recipe)",
    "no_recompute": "no activation recomputation",
    "cluster": f"cluster {PAPER_SYSTEMS['h100-sxm-80gb']} (8 x 400 Gb/s per node, inferred from "
    "the paper's nccl-tests figure)",
    "a100_network": "A100 in DGX A100 nodes, 200 Gb/s per GPU (the paper's A100 network is not "
    "published)",
    "nccl_latency": "calibrated nccl_latency_scale (the published data barely constrain it; "
    "table claim_sensitivity)",
    "fsdp_plans": "FSDP plans only, tp in 1-8, pp in 1-16, tp*pp <= 16",
}

# The paper's published numbers (Fernandez et al., arXiv 2411.13055), defined once here.
PAPER_THROUGHPUT_DROP_PCT = 37.22
"""Per-GPU throughput drop from 128 to 2,048 H100 GPUs, Llama-2 7B with FSDP, percent."""
PAPER_POWER_DROP_PCT = 5.87
"""Power-per-GPU drop over the same range, percent."""
PAPER_MFU_PCT = {"a100-sxm-80gb": 59.67, "h100-sxm-80gb": 40.77}
"""MFU by GPU generation, percent."""
PAPER_BEST_DEGREE = (2, 4)
"""Range of the best model-parallel degree tp·pp at 2,048 GPUs."""

#: ``check`` of a claim the simulator reproduces without having been fitted to it.
REPRODUCED = "reproduced (not fitted to this claim)"
#: The check of a claim predicted from sourced parameters (:attr:`Claim.basis`).
PREDICTED = "prediction checked against the paper (no parameter fitted to it)"

_FSDP_SETUP = (
    "Llama-2 7B, PyTorch FSDP, H100 SXM 80GB on the paper's cluster (fernandez-h100: 8 GPUs and "
    "8 x 400 Gb/s per node, inferred from its nccl-tests figure), seq 4,096, global batch "
    "2,048 sequences, micro-batch 2 per GPU (1 where the local batch is 1), no recomputation"
)
_A100_SETUP = (
    "Llama-2 7B, PyTorch FSDP, A100 SXM 80GB (DGX A100, 200 Gb/s per GPU), seq 4,096, global "
    "batch 2,048 sequences, micro-batch 2 per GPU, no recomputation"
)
_MP_SETUP = (
    "2,048 H100 GPUs; FSDP plans only, as the paper compares them (full sharding across the "
    "data-parallel replicas; HSDP and DDP are not candidates, so table best_plans, which also "
    "tries HSDP, can pick another plan); tp in 1-8, pp in 1-16 with tp*pp <= 16, no or full "
    "recomputation, micro-batch 2 per GPU or the local batch if smaller; best = highest "
    "tokens/s that fits in memory"
)

_FSDP_ASSUMPTIONS = (
    "global_batch",
    "seq_len",
    "micro_batch",
    "no_recompute",
    "cluster",
    "nccl_latency",
)
_A100_ASSUMPTIONS = (
    "global_batch",
    "seq_len",
    "micro_batch",
    "no_recompute",
    "a100_network",
    "nccl_latency",
)
_MP_ASSUMPTIONS = (
    "global_batch",
    "seq_len",
    "micro_batch",
    "cluster",
    "fsdp_plans",
    "nccl_latency",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One claim of the paper and how it is checked."""

    key: str
    """Name of the reproduced value (:func:`trainscale.paper.claims.reproduce_claims`)."""
    claim: str
    """What the paper says, in words."""
    paper_value: float | tuple[float, float]
    """The paper's number, or the range it gives (inclusive)."""
    unit: str
    tolerance: float | None
    """Allowed absolute difference (in ``unit``) for a number; None for a range."""
    setup: str
    assumptions: tuple[str, ...] = ()
    """Names in :data:`ASSUMPTIONS` the reproduced value rests on."""
    fitted_to: str | None = None
    """The calibrated parameter that was solved to reproduce this very claim (then agreement is
    by construction, not a test), or None."""
    basis: str | None = None
    """For a claim no parameter was fitted to, what its prediction rests on (the check says so),
    or None."""

    @property
    def study_text(self) -> str:
        if isinstance(self.paper_value, tuple):
            return f"{self.paper_value[0]:g}–{self.paper_value[1]:g}"
        return f"{self.paper_value:g}"

    @property
    def assumptions_text(self) -> str:
        """The claim's assumptions in words, ``; ``-separated (:data:`ASSUMPTIONS`)."""
        return "; ".join(ASSUMPTIONS[name] for name in self.assumptions)

    @property
    def check_text(self) -> str:
        if self.fitted_to is None:
            return REPRODUCED if self.basis is None else f"{PREDICTED}: {self.basis}"
        return (
            f"calibration target: {self.fitted_to} is fitted to this value, "
            "so it agrees by construction"
        )

    @property
    def tolerance_text(self) -> str:
        if self.tolerance is None:
            return f"within {self.study_text}"
        return f"±{self.tolerance:g} points" if self.unit == "%" else f"±{self.tolerance:g}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` agrees with the paper within the tolerance (False for NaN)."""
        if pd.isna(value):
            return False
        if isinstance(self.paper_value, tuple):
            low, high = self.paper_value
            return bool(low <= value <= high)
        return bool(abs(value - self.paper_value) <= self.tolerance)


#: What the claims of each setup rest on (keys of :data:`ASSUMPTIONS`): a claim's assumptions are
#: those of the setup it is simulated in.
_FSDP_ASSUMPTIONS = (
    "global_batch", "seq_len", "micro_batch", "no_recompute", "cluster", "nccl_latency",
)  # fmt: skip
_A100_ASSUMPTIONS = (
    "global_batch", "seq_len", "micro_batch", "no_recompute", "a100_network", "nccl_latency",
)  # fmt: skip
_MP_ASSUMPTIONS = (
    "global_batch", "seq_len", "micro_batch", "cluster", "fsdp_plans", "nccl_latency",
)  # fmt: skip

#: The claims, in table order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        key="throughput_drop_pct",
        unit="%",
        paper_value=PAPER_THROUGHPUT_DROP_PCT,
        tolerance=5.0,
        claim="Drop of tokens/s per GPU from 128 to 2,048 GPUs",
        assumptions=_FSDP_ASSUMPTIONS,
        setup=_FSDP_SETUP,
    ),
    Claim(
        key="power_drop_pct",
        unit="%",
        paper_value=PAPER_POWER_DROP_PCT,
        tolerance=2.0,
        claim="Drop of GPU-board power per GPU from 128 to 2,048 GPUs",
        assumptions=_FSDP_ASSUMPTIONS,
        setup=_FSDP_SETUP,
        basis="the GPU-board phase fractions are set from their sources (exposed communication "
        "draws the idle power with a context held, power_comm_frac 0: Choukse et al. 2025, "
        "arXiv 2508.14318), so the drop follows from the simulated share of exposed "
        "communication at each scale",
    ),
    Claim(
        key="mfu_a100_pct",
        unit="%",
        paper_value=PAPER_MFU_PCT["a100-sxm-80gb"],
        tolerance=5.0,
        claim="MFU on A100 at 128 GPUs",
        assumptions=_A100_ASSUMPTIONS,
        setup=_A100_SETUP,
    ),
    Claim(
        key="mfu_h100_pct",
        unit="%",
        paper_value=PAPER_MFU_PCT["h100-sxm-80gb"],
        tolerance=5.0,
        claim="MFU on H100 at 128 GPUs",
        assumptions=_FSDP_ASSUMPTIONS,
        setup=_FSDP_SETUP,
    ),
    Claim(
        key="best_degree_llama2_7b",
        unit="tp*pp",
        paper_value=tuple(float(d) for d in PAPER_BEST_DEGREE),
        tolerance=None,
        claim="Model-parallel degree (tp*pp) of the best FSDP plan at 2,048 GPUs, Llama-2 7B",
        assumptions=_MP_ASSUMPTIONS,
        setup=_MP_SETUP,
    ),
    Claim(
        key="best_degree_llama2_70b",
        unit="tp*pp",
        paper_value=tuple(float(d) for d in PAPER_BEST_DEGREE),
        tolerance=None,
        claim="Model-parallel degree (tp*pp) of the best FSDP plan at 2,048 GPUs, Llama-2 70B",
        assumptions=_MP_ASSUMPTIONS,
        setup=_MP_SETUP,
    ),
)
