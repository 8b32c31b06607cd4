"""The *system*: GPUs, nodes and networks, and what they cost in time and power (Calculon's split).

- :mod:`~trainscale.sim.system.hardware` — the hardware catalogue (``data/hardware.yaml``);
- :mod:`~trainscale.sim.system.compute` — GEMM roofline with a size-dependent efficiency curve,
  FlashAttention, memory-bound kernels;
- :mod:`~trainscale.sim.system.collectives` — the NCCL-like cost model of collectives;
- :mod:`~trainscale.sim.system.power` — power per GPU from time per phase.
"""
