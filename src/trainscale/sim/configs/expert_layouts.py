"""Expert parallelism in the plan: the layouts each framework accepts.

A mixture-of-experts block runs on two groupings of the same GPUs ("parallel folding", Liu et al.,
*MoE Parallel Folding*, arXiv 2504.14960, Sec 3): attention and dense blocks on ``tp x cp x dp``
per pipeline stage, the routed experts on ``etp x ep x edp``, where

- ``ep`` (expert parallelism) splits the experts: each GPU holds ``num_experts / ep`` of them;
- ``etp`` (expert tensor parallelism) splits each expert's matrices; Megatron-Core's
  ``--expert-tensor-parallel-size`` defaults to ``--tensor-model-parallel-size``;
- ``edp = num_gpus / (pp x ep x etp)`` (expert data parallelism,
  :func:`trainscale.sim.degrees.expert_data_parallel_degree`) replicates (or, with FSDP, shards)
  each expert; expert gradients are reduced over it, dense gradients over ``dp``.

Every function takes arrays (one element per configuration) and returns arrays; the rules return
a boolean mask of the rows that break them, and :data:`RULES` names each rule and its source.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "RULES",
    "deepspeed_breaks",
    "megatron_breaks",
    "torchtitan_breaks",
]

#: Rule key -> what it says and where the framework states it (what an error cites).
RULES = {
    "moe_model": "ep > 1 or etp != tp needs a mixture-of-experts model",
    "experts_divisible": (
        "num_experts must be divisible by ep (each GPU holds num_experts / ep whole experts; "
        "Megatron-LM megatron/training/arguments.py, torchtitan ExpertParallel)"
    ),
    "expert_ffn_divisible": "expert_ffn must be divisible by etp (each expert's columns split)",
    "folding": (
        "Megatron-Core parallel folding: num_gpus must be divisible by pp·ep·etp "
        "(megatron/core/parallel_state.py initialize_model_parallel; arXiv 2504.14960 Sec 3)"
    ),
    "ep_tp_sequence_parallel": (
        "Megatron-LM: with ep > 1 and tp > 1, sequence parallelism must be used "
        "(megatron/training/arguments.py)"
    ),
    "titan_etp": (
        "FSDP2 + EP (torchtitan torchtitan/distributed/parallel_dims.py): etp must be 1 or tp"
    ),
    "titan_borrow": (
        "FSDP2 + EP (torchtitan parallel_dims.py): ep borrows all of cp (and of tp when etp = 1) "
        "and part of the data-parallel shard degree: with etp = tp, ep % cp == 0 and "
        "(dp·cp) % ep == 0; with etp = 1, ep % (cp·tp) == 0 and (dp·cp·tp) % ep == 0"
    ),
    "deepspeed_ep": (
        "DeepSpeed-MoE: the expert-parallel group is carved out of the data-parallel group, so "
        "dp must be divisible by ep, and etp must be 1 or tp (expert tensor slicing uses the "
        "model-parallel group; deepspeed/utils/groups.py _create_expert_and_data_parallel)"
    ),
}


def megatron_breaks(
    num_gpus: np.ndarray,
    tp: np.ndarray,
    pp: np.ndarray,
    ep: np.ndarray,
    etp: np.ndarray,
    sequence_parallel: np.ndarray,
) -> dict[str, np.ndarray]:
    """Rows of a Megatron-Core plan that break its expert-parallel rules (:data:`RULES`)."""
    return {
        "folding": num_gpus % np.maximum(pp * ep * etp, 1) != 0,
        "ep_tp_sequence_parallel": (ep > 1) & (tp > 1) & ~sequence_parallel,
    }


def torchtitan_breaks(
    tp: np.ndarray, cp: np.ndarray, dp: np.ndarray, ep: np.ndarray, etp: np.ndarray
) -> dict[str, np.ndarray]:
    """Rows of a PyTorch FSDP2 + EP plan (torchtitan) that break its rules (:data:`RULES`);
    ``dp`` is torchtitan's ``dp_shard``: the data-parallel degree ``num_gpus / (tp·pp·cp)``, or
    for HSDP the part of it within a node."""
    moe = ep > 1
    with_tp = (ep % cp != 0) | ((dp * cp) % ep != 0)
    without_tp = (ep % (cp * tp) != 0) | ((dp * cp * tp) % ep != 0)
    return {
        "titan_etp": moe & (etp != 1) & (etp != tp),
        "titan_borrow": moe & np.where(etp == tp, with_tp, np.where(etp == 1, without_tp, False)),
    }


def deepspeed_breaks(
    tp: np.ndarray, dp: np.ndarray, ep: np.ndarray, etp: np.ndarray
) -> dict[str, np.ndarray]:
    """Rows of a DeepSpeed-MoE plan that break its rules (:data:`RULES`)."""
    return {"deepspeed_ep": (ep > 1) & ((dp % ep != 0) | ((etp != 1) & (etp != tp)))}
