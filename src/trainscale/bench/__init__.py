"""The benchmark harness: a real training loop that writes real logs (``trainscale bench``).

One concept per module; only :mod:`~trainscale.bench.config`, :mod:`~trainscale.bench.options`,
:mod:`~trainscale.bench.manifest`, :mod:`~trainscale.bench.sweep` and
:mod:`~trainscale.bench.logging` work without PyTorch, and this package imports none of the
others, so ``import trainscale.bench`` never needs torch. The package imports nothing above it
(the command line, :mod:`trainscale.commands.bench`, imports it).

- :mod:`~trainscale.bench.config`: what a run does (:class:`BenchConfig`), checked up front;
- :mod:`~trainscale.bench.options`: the ``trainscale bench`` options, built from its fields;
- :mod:`~trainscale.bench.model`: a Llama-style decoder of the configured shape;
- :mod:`~trainscale.bench.parallel`: device mesh, tensor parallelism, FSDP2 / HSDP / ZeRO-2 / DDP;
- :mod:`~trainscale.bench.distributed`: the rank, its device and its process group;
- :mod:`~trainscale.bench.loop`: the training loop of one rank;
- :mod:`~trainscale.bench.step`: synthetic batches and one training step;
- :mod:`~trainscale.bench.timing`: the step clock and the summary of the timed steps;
- :mod:`~trainscale.bench.instruments`: power sampler, trace window, the run's files;
- :mod:`~trainscale.bench.record`: the step log's settings, the manifest's configuration and
  cluster;
- :mod:`~trainscale.bench.logging`: torchtitan-format step lines;
- :mod:`~trainscale.bench.power`: NVML power sampling into an ``nvidia-smi``-style CSV;
- :mod:`~trainscale.bench.profile`: a Kineto trace of a few warm-up steps per rank;
- :mod:`~trainscale.bench.device`: device name, catalogue key, peak FLOP/s, peak memory;
- :mod:`~trainscale.bench.manifest`: the run's ``run.yaml``;
- :mod:`~trainscale.bench.sweep`: sweeps of benches for the Snakemake rule ``bench_run``.
"""

from __future__ import annotations

from trainscale.bench.config import BenchConfig, BenchPlan, plan_bench

__all__ = ["BenchConfig", "BenchPlan", "plan_bench"]
