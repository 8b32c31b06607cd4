"""Activation recomputation and memory (trainscale.sim.model.memory): for the same plan, none
needs at least what selective needs, and selective at least what full needs, on every GPU of the
catalogue, with and without FlashAttention (V100 stores the s×s attention scores)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.simulate import predict

CATALOGUE = load_catalogue()
GPUS = sorted(CATALOGUE.hardware.gpus)

#: Plans from short to long context, unsplit to deep pipelines, tensor and context parallel;
#: every stage holds at least two blocks' activations (layers per stage x micro-batches in
#: flight), the case the module's docstring states the order for.
PLANS = [
    {"seq_len": seq, "pp": pp, "tp": tp, "cp": cp, "micro_batch": mb}
    for seq, pp, tp, cp, mb in itertools.product(
        [2048, 8192, 32768], [1, 2, 8, 32], [1, 8], [1, 2], [1, 4]
    )
]


def _memory(gpu: str, model: str) -> pd.DataFrame:
    """mem_gib_per_gpu of every plan under each recomputation mode: one row per plan."""
    rows = []
    for plan in PLANS:
        for recompute in ("none", "selective", "full"):
            mp = plan["tp"] * plan["pp"] * plan["cp"]
            batch = 64 * plan["micro_batch"]
            rows.append({
                "model": model, "gpu": gpu, "num_gpus": 8 * mp, "global_batch": batch,
                "sharding": "zero1", "recompute": recompute, "precision": "bf16", **plan,
            })  # fmt: skip
    results = predict(pd.DataFrame(rows), catalogue=CATALOGUE)
    assert len(results) == len(rows)
    results["plan"] = [i // 3 for i in range(len(rows))]
    return results.pivot(index="plan", columns="recompute", values="mem_gib_per_gpu")


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("model", ["llama2-7b", "llama2-70b"])
def test_selective_needs_at_least_full_and_none_at_least_selective(gpu: str, model: str) -> None:
    memory = _memory(gpu, model)
    assert (memory["selective"] >= memory["full"]).all(), memory[
        memory["selective"] < memory["full"]
    ]
    assert (memory["none"] >= memory["selective"]).all()


def test_without_flash_attention_selective_holds_one_blocks_scores() -> None:
    """V100 at 32k tokens: selective drops the stored scores of every block but still holds one
    block's while its attention core is recomputed, as full holds one block's whole activations."""
    assert not CATALOGUE.hardware.gpus["v100-sxm-32gb"].flash_attention
    v100 = _memory("v100-sxm-32gb", "llama2-7b")
    h100 = _memory("h100-sxm-80gb", "llama2-7b")
    long_context = [i for i, plan in enumerate(PLANS) if plan["seq_len"] == 32768]
    # with FlashAttention selective stores what none stores; without it, strictly less
    assert (h100.loc[long_context, "selective"] == h100.loc[long_context, "none"]).all()
    assert (v100.loc[long_context, "selective"] < v100.loc[long_context, "none"]).all()
    # and more than with FlashAttention: the recomputed scores of one block
    assert (v100.loc[long_context, "selective"] > h100.loc[long_context, "selective"]).all()
