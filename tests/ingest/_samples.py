"""Where the real sample files are: the project's copies under data/runs/, else ../shared.

Reference: ../shared/real-samples/README.md (origin, commit and licence of each file); the copies
are described in data/runs/hta_samples/ORIGIN.md and data/runs/megatron_golden_345m/ORIGIN.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_SAMPLES = REPO.parent / "shared" / "real-samples"
_FOLDERS = (
    REPO / "data" / "runs" / "hta_samples" / "traces",
    REPO / "data" / "runs" / "megatron_golden_345m",
    SHARED_SAMPLES,
)

TRACE_FILTER_RANK0 = "hta_trace_filter_sampled_rank-0.json.gz"
TRACE_FILTER_RANK1 = "hta_trace_filter_sampled_rank-1.json.gz"
NCCL_PARSER_CONFIG = "hta_nccl_parser_config_nccl_data.json.gz"
MEGATRON_GOLDEN = "megatron_golden_values_gpt3_345m_1N8G_mcore_tp1_pp2_dev_dgx_h100.json"


def sample_file(name: str) -> Path:
    """Path of a real sample file; skip the test when neither location has it."""
    for folder in _FOLDERS:
        if (folder / name).is_file():
            return folder / name
    pytest.skip(
        f"real sample {name!r} not found: neither the copy under data/runs/ nor the shared "
        f"folder {SHARED_SAMPLES} is present"
    )
