"""Validate a configuration table and turn it into arrays (one element per configuration).

This is the one place where a plan is checked (Calculon's ``Llm`` constructor, torchtitan's
``ParallelDims._validate``): every problem is collected with its row and column and what is
allowed, then raised together as one :class:`~trainscale.errors.ConfigurationError`, or — with
``skip_invalid`` — returned as a rejects table.

Rules (each message names the factors involved):

- the model comes from ``model`` (catalogue key) or from all of the shape columns; explicit shape
  columns override the catalogue; ``hidden`` divisible by ``heads``, ``heads`` by ``kv_heads``;
- positive integers for shape, batch, GPU count and degrees, each within its plausible range
  (:data:`trainscale.schema.NUMERIC_BOUNDS`, so that no product of them overflows int64); the
  optional ``gpus_per_node``, ``nic_gbit_per_s_per_gpu`` and ``power_limit_w`` within theirs
  (0 or empty: the default); text that is not a plain number (``1,024``, ``0,5``, ``−2``,
  ``400 Gb/s``) is named as such (:func:`trainscale.io.numbers.number_problem`); known ``gpu``;
- ``tp`` divides ``heads`` and ``kv_heads`` divides by ``tp`` or ``tp`` by ``kv_heads``
  (KV heads are replicated when ``tp`` > ``kv_heads``, as in Megatron-LM);
- ``num_gpus`` divisible by ``tp·pp·cp``; ``global_batch`` divisible by ``dp·micro_batch``;
- ``seq_len`` divisible by ``2·cp`` (causal load balancing splits the sequence in 2·cp chunks);
- ``vpp`` > 1 needs ``pp`` > 1 and ``grad_accum`` divisible by ``pp`` (interleaved 1F1B);
- ``layers`` ≥ ``pp·vpp`` (a stage that is not a multiple gets ``ceil(layers / (pp·vpp))`` layers
  per chunk: the slowest stage sets the pace);
- ``fp8`` only on GPUs with FP8 tensor cores; ``hsdp`` needs ``dp`` > 1;
- ``system`` (optional) is a catalogue system holding the row's GPU;
- ``framework`` is a profile of ``data/frameworks.yaml``; its behaviours come from the profile
  unless an override column (``overlap_grad_reduce``, ``overlap_param_gather``,
  ``tp_comm_overlap``, ``fused_kernels``, ``repeat_kv``, ``shard_granularity``,
  ``attention_kernel``, ``fp8_recipe``, ``cp_comm_type``) sets them;
  an override that contradicts the plan (a granularity for unsharded parameters, an FP8 recipe in
  bf16, a parameter gather under DDP, TP overlap without TP) is an error, and so is a plan the
  stack refuses (its profile's ``pipeline_shardings`` and ``pipeline_schedules``: DeepSpeed with
  ZeRO-2/3 and ``pp`` > 1, or with ``vpp`` > 1).
"""

from __future__ import annotations

# One seam a module: arrays (Configs and its model, plan, stack and system parts), problems
# (collecting them), columns (reading cells), shape (the model), gpus (the hardware), behaviours
# (the framework profile), plan (the interlocks), build (build_configs, which runs them in that
# order and assembles Configs).
from trainscale.sim.configs.arrays import Configs
from trainscale.sim.configs.build import build_configs

__all__ = ["Configs", "build_configs"]
