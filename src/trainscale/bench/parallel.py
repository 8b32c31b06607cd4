"""Parallelism for the harness: device mesh, tensor parallelism, FSDP2 / HSDP / ZeRO-2, DDP.

Steps, in this order (torchtitan's ``parallelize_llama``):

1. :func:`build_mesh`: a device mesh ``(dp, tp)``, or ``(dp_replicate, dp_shard, tp)`` for HSDP
   (replicate across nodes, shard within a node);
2. :func:`apply_tensor_parallel`: Megatron-style column/row sharding of every block's
   ``wq``/``wk``/``wv``/``wo`` and ``w1``/``w3``/``w2`` over the ``tp`` axis
   (``torch.distributed.tensor.parallel``; no sequence parallelism: norms, embedding and head
   stay replicated over ``tp``);
3. :func:`apply_data_parallel`: ``fully_shard`` (FSDP2) per block and at the root over the
   data-parallel axes — ``fsdp`` reshards parameters after the forward, ``zero2`` keeps them
   gathered until the backward, ``hsdp`` shards within and replicates across nodes — or
   ``DistributedDataParallel`` for ``ddp``. On CUDA, FSDP gathers parameters in bf16 and reduces
   gradients in fp32 (``MixedPrecisionPolicy``); on CPU everything stays fp32.

:func:`check_tensor_parallel_support` runs a one-layer TP forward/backward on the mesh before the
real model is built, so an unsupported build or backend fails with a clear message instead of a
traceback deep inside the training step.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from trainscale.errors import TrainscaleError

__all__ = [
    "ParallelUnsupportedError",
    "apply_data_parallel",
    "apply_tensor_parallel",
    "build_mesh",
    "check_tensor_parallel_support",
    "clip_grad_norm",
    "data_parallel_mesh",
]

Sharding = Literal["fsdp", "zero2", "hsdp", "ddp"]


class ParallelUnsupportedError(TrainscaleError):
    """The PyTorch build or process-group backend cannot run the requested parallelism."""


def build_mesh(
    device_type: str, *, world_size: int, tp: int, sharding: Sharding, nodes: int
) -> DeviceMesh:
    """Return the device mesh for ``world_size`` ranks.

    Parameters
    ----------
    device_type
        ``"cpu"`` or ``"cuda"``.
    world_size
        Ranks in the job.
    tp
        Tensor-parallel degree (innermost axis, so TP groups stay inside a node).
    sharding
        ``hsdp`` adds a ``dp_replicate`` axis of size ``nodes``; the others use one ``dp`` axis.
    nodes
        Nodes in the job (``world_size / local_world_size``).

    Raises
    ------
    TrainscaleError
        ``tp`` does not divide ``world_size``, or HSDP's ``dp`` does not divide by ``nodes``.
    """
    if world_size % tp:
        raise TrainscaleError(f"tp {tp} does not divide the world size {world_size}")
    dp = world_size // tp
    if sharding == "hsdp":
        if nodes < 2 or dp % nodes:
            raise TrainscaleError(
                f"hsdp replicates across nodes: needs >= 2 nodes dividing dp = world size "
                f"{world_size} / tp {tp} = {dp}; got {nodes} node(s)"
            )
        return init_device_mesh(
            device_type, (nodes, dp // nodes, tp), mesh_dim_names=("dp_replicate", "dp_shard", "tp")
        )
    return init_device_mesh(device_type, (dp, tp), mesh_dim_names=("dp", "tp"))


def data_parallel_mesh(mesh: DeviceMesh) -> DeviceMesh:
    """The data-parallel part of ``mesh`` (1-D ``dp``, or 2-D ``dp_replicate × dp_shard``)."""
    names = mesh.mesh_dim_names or ()
    if "dp_replicate" in names:
        return mesh["dp_replicate", "dp_shard"]
    return mesh["dp"]


def _tp_plan() -> dict[str, object]:
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return {
        "attention.wq": ColwiseParallel(),
        "attention.wk": ColwiseParallel(),
        "attention.wv": ColwiseParallel(),
        "attention.wo": RowwiseParallel(),
        "feed_forward.w1": ColwiseParallel(),
        "feed_forward.w3": ColwiseParallel(),
        "feed_forward.w2": RowwiseParallel(),
    }


def apply_tensor_parallel(model: nn.Module, tp_mesh: DeviceMesh) -> None:
    """Shard every transformer block of ``model`` (a ``LlamaDecoder``) over ``tp_mesh``.

    Column-parallel ``wq``/``wk``/``wv``/``w1``/``w3`` and row-parallel ``wo``/``w2``: one
    all-reduce after attention and one after the MLP in the forward, two in the backward.
    """
    from torch.distributed.tensor.parallel import parallelize_module

    for block in model.layers:  # type: ignore[attr-defined]
        parallelize_module(block, tp_mesh, _tp_plan())  # type: ignore[arg-type]


def check_tensor_parallel_support(tp_mesh: DeviceMesh, device: torch.device) -> None:
    """Run a tiny column→row-parallel MLP forward and backward on ``tp_mesh``.

    Raises
    ------
    ParallelUnsupportedError
        The build or the backend cannot run it; the message names the backend and the error.
    """
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    try:
        torch.manual_seed(0)
        probe = nn.Sequential(nn.Linear(8, 16, bias=False), nn.Linear(16, 8, bias=False)).to(device)
        parallelize_module(probe, tp_mesh, {"0": ColwiseParallel(), "1": RowwiseParallel()})
        probe(torch.ones(2, 8, device=device)).sum().backward()
    except Exception as error:
        backend = dist.get_backend() if dist.is_initialized() else "none"
        raise ParallelUnsupportedError(
            f"tensor parallelism is not supported by this PyTorch build ({torch.__version__}) "
            f"with the {backend!r} backend on {device.type}: {type(error).__name__}: {error}. "
            "Run with --tp 1 (FSDP only)."
        ) from error


def apply_data_parallel(
    model: nn.Module,
    mesh: DeviceMesh,
    *,
    sharding: Sharding,
    device: torch.device,
) -> nn.Module:
    """Wrap ``model`` for data parallelism; returns the module to train.

    ``fsdp``/``zero2``/``hsdp``: ``fully_shard`` on each block, then on the root (the
    embedding, final norm and head form the root group). ``ddp``: ``DistributedDataParallel``
    (only with ``tp`` = 1).

    Raises
    ------
    TrainscaleError
        ``ddp`` combined with tensor parallelism.
    """
    dp_mesh = data_parallel_mesh(mesh)
    if sharding == "ddp":
        if mesh["tp"].size() > 1:
            raise TrainscaleError("--sharding ddp cannot be combined with --tp > 1; use fsdp")
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids, process_group=dp_mesh.get_group())

    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp_policy = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if device.type == "cuda"
        else MixedPrecisionPolicy()
    )
    reshard = sharding != "zero2"
    for block in model.layers:  # type: ignore[attr-defined]
        fully_shard(block, mesh=dp_mesh, reshard_after_forward=reshard, mp_policy=mp_policy)
    # The root group is used last in the forward: resharding it right away would only
    # re-gather it for the backward (torchtitan does the same).
    fully_shard(model, mesh=dp_mesh, reshard_after_forward=False, mp_policy=mp_policy)
    return model


def clip_grad_norm(parameters: list[nn.Parameter], max_norm: float) -> float:
    """Clip gradients to a global L2 norm of ``max_norm``; return the norm before clipping.

    Works for a mix of plain tensors and DTensors on different meshes (FSDP-sharded,
    tensor-parallel or both), which ``torch.nn.utils.clip_grad_norm_`` cannot stack: each
    gradient's norm is reduced to a full (replicated) value first.
    """
    from torch.distributed.tensor import DTensor

    norms = []
    grads = [p.grad for p in parameters if p.grad is not None]
    for grad in grads:
        norm = torch.linalg.vector_norm(grad, dtype=torch.float32)
        norms.append(norm.full_tensor() if isinstance(norm, DTensor) else norm)
    if not norms:
        return 0.0
    total = float(torch.linalg.vector_norm(torch.stack(norms)))
    coefficient = max_norm / (total + 1e-6)
    if coefficient < 1.0:
        for grad in grads:
            grad.mul_(coefficient)
    return total
