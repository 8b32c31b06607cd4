"""Model states per GPU under each data-parallel sharding, against the ZeRO paper's example."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from trainscale.schema import FINETUNE_MODES, Sharding
from trainscale.sim.model.memory import model_state_bytes


def test_model_states_are_the_zero_papers_for_a_7_5b_model_on_64_gpus():
    # Rajbhandari et al. 2020 (ZeRO, arXiv 1910.02054, figure 1): mixed-precision Adam keeps
    # 2 + 2 + 12 = 16 bytes per parameter; a 7.5B-parameter model on 64 data-parallel GPUs holds
    # 120 GB per GPU unsharded, 31.4 GB with the optimizer states sharded (ZeRO-1), 16.6 GB with
    # the gradients too (ZeRO-2) and 1.9 GB with the parameters too (ZeRO-3, FSDP).
    shardings = [Sharding.DDP, Sharding.ZERO1, Sharding.ZERO2, Sharding.FSDP]
    n = len(shardings)
    ones, no = np.ones(n, dtype=np.int64), np.zeros(n, dtype=bool)
    plan = SimpleNamespace(
        pp=ones, vpp=ones, sharding=np.array(shardings),
        finetune=np.full(n, FINETUNE_MODES.index("none")), lora_rank=np.zeros(n, dtype=np.int64),
    )  # fmt: skip
    stack = SimpleNamespace(distributed_optimizer=no, deferred_grad_sync=no)
    zero = np.zeros(n)
    work = SimpleNamespace(
        layer_param_bytes=np.full(n, 2.0 * 7.5e9), embedding_param_bytes=zero, tokens=zero,
        gemms=((zero, zero, zero), (zero, zero, zero)),
    )  # fmt: skip
    place = SimpleNamespace(shard_size=np.full(n, 64))
    states_gb = model_state_bytes(ones.astype(np.float64), plan, stack, work, place) / 1e9
    assert states_gb == pytest.approx([120.0, 31.4, 16.6, 1.9], abs=0.05)
