"""Fitting the simulator's free parameters: :mod:`.fit` (``trainscale calibrate``: the shipped
calibration and its leave-one-source-out predictions), :mod:`.sensitivity` (prior scans and the
claims' sensitivity to NCCL's latency scale), :mod:`.user` (a user's calibration on their own
runs)."""
