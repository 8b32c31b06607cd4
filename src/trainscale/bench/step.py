"""One training step of the harness: synthetic batches, forward and backward, optimizer step.

Each data-parallel rank trains on one fixed batch of random tokens (``local_batch × seq_len``,
seeded by its data-parallel index, the same for the ``tp`` ranks that share it), split into
``grad_accum`` micro-batches. A step runs forward and backward per micro-batch (the gradient
sync only on the last), clips the gradients to norm :data:`MAX_GRAD_NORM` and steps AdamW; on
CUDA under bf16 autocast, on the CPU in fp32.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn.functional as F

from trainscale.bench.config import BenchConfig, BenchPlan
from trainscale.bench.parallel import clip_grad_norm

__all__ = ["MAX_GRAD_NORM", "MicroBatch", "synthetic_batches", "train_step"]

#: Gradient clipping norm.
MAX_GRAD_NORM = 1.0

#: Inputs and labels (the inputs shifted by one token) of one micro-batch, (batch, seq_len).
MicroBatch = tuple[torch.Tensor, torch.Tensor]


def synthetic_batches(
    config: BenchConfig, plan: BenchPlan, dp_index: int, device: torch.device
) -> list[MicroBatch]:
    """This data-parallel rank's fixed batch of random tokens, as ``grad_accum`` micro-batches."""
    data = torch.Generator().manual_seed(config.seed + 1 + dp_index)
    vocab = int(config.shape.vocab)
    tokens = torch.randint(vocab, (plan.local_batch, config.seq_len + 1), generator=data)
    tokens = tokens.to(device)
    return list(
        zip(
            tokens[:, :-1].split(config.micro_batch),
            tokens[:, 1:].split(config.micro_batch),
            strict=True,
        )
    )


def train_step(
    model: torch.nn.Module,
    micro: list[MicroBatch],
    optimizer: torch.optim.Optimizer,
    params: list[torch.nn.Parameter],
    *,
    sharding: str,
    cuda: bool,
) -> tuple[torch.Tensor, float]:
    """One optimizer step over the micro-batches; returns this rank's loss (the mean over its
    micro-batches, a tensor on the device, not yet reduced over ranks) and the gradient norm
    before clipping."""
    loss_sum = torch.zeros((), device=micro[0][0].device)
    for index, (inputs, labels) in enumerate(micro):
        last = index == len(micro) - 1
        with _gradient_sync(model, last, sharding), _autocast(cuda):
            logits = model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
            loss = loss / len(micro)
        loss.backward()
        loss_sum += loss.detach()
    grad_norm = clip_grad_norm(params, MAX_GRAD_NORM)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, grad_norm


def _autocast(cuda: bool) -> contextlib.AbstractContextManager[Any]:
    return torch.autocast("cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext()


def _gradient_sync(model: torch.nn.Module, sync: bool, sharding: str):  # type: ignore[no-untyped-def]
    """Skip the gradient reduction on all but the last micro-batch."""
    if sharding == "ddp":
        return contextlib.nullcontext() if sync else model.no_sync()  # type: ignore[operator]
    model.set_requires_gradient_sync(sync)  # type: ignore[operator]
    return contextlib.nullcontext()
