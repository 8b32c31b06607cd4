"""The block's work: the parameter bytes one GPU holds, from the shape, against a published
parameter count."""

from __future__ import annotations

import pandas as pd
import pytest

from trainscale.sim.configs import build_configs
from trainscale.sim.model.work import block_work

_ROW = {
    "model": "llama2-7b", "seq_len": 4096, "global_batch": 64, "micro_batch": 1,
    "gpu": "h100-sxm-80gb", "num_gpus": 8, "pp": 1, "cp": 1, "sharding": "fsdp",
    "recompute": "none", "precision": "bf16", "framework": "pytorch",
}  # fmt: skip


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_llama2_7b_parameters_are_its_published_count_split_over_tp(catalogue, tp):
    rows = pd.DataFrame([{**_ROW, "tp": tp}])
    c, valid, _ = build_configs(rows, hardware=catalogue.hardware, models=catalogue.models,
                                frameworks=catalogue.frameworks)  # fmt: skip
    assert list(valid) == [0]
    w = block_work(c.model, c.plan, c.stack)
    # Llama-2-7B: 6,738,415,616 parameters (the Hugging Face checkpoint meta-llama/Llama-2-7b-hf;
    # "7B" in Touvron et al. 2023, arXiv 2307.09288, table 1): 32 blocks, hidden 4,096, ffn
    # 11,008, vocab 32,000, untied embeddings; the norms (two per block and the final one,
    # 4,096 each) are not sharded and not in the block's bf16 bytes (2 per parameter).
    norms = (2 * 32 + 1) * 4096
    per_gpu = 32 * w.layer_param_bytes[0] / 2.0 + w.embedding_param_bytes[0] / 2.0
    assert per_gpu * tp + norms == 6_738_415_616
