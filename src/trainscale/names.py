"""Readable names of catalogue keys, for every figure, table and note (``llama2-7b`` → ``Llama-2
7B``, ``h100-sxm-80gb`` → ``H100 80GB``)."""

from __future__ import annotations

import re

__all__ = ["gpu_label", "model_label"]

_GPU_LABELS = {
    "v100-sxm-32gb": "V100 32GB",
    "a100-sxm-40gb": "A100 40GB",
    "a100-sxm-80gb": "A100 80GB",
    "h100-sxm-80gb": "H100 80GB",
    "h200-sxm-141gb": "H200 141GB",
    "b200": "B200",
}
_MODEL_FAMILIES = {"llama2": "Llama-2", "llama3": "Llama-3", "gpt3": "GPT-3", "mpt": "MPT"}


def model_label(key: str) -> str:
    """Readable model name: ``llama2-7b`` → ``Llama-2 7B``; unknown keys are returned as given."""
    match = re.fullmatch(r"([a-z]+\d*)-(\d+(?:\.\d+)?)([bm])", str(key))
    if not match or match.group(1) not in _MODEL_FAMILIES:
        return str(key)
    return f"{_MODEL_FAMILIES[match.group(1)]} {match.group(2)}{match.group(3).upper()}"


def gpu_label(key: str) -> str:
    """Readable GPU name: ``h100-sxm-80gb`` → ``H100 80GB``; unknown keys are returned as given."""
    return _GPU_LABELS.get(str(key), str(key))
