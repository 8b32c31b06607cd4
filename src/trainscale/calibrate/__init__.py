"""Fitting the simulator's free parameters: :mod:`.fit` (``trainscale calibrate``: the shipped
calibration and its leave-one-source-out predictions), :mod:`.sensitivity` (prior scans),
:mod:`.user` (a user's calibration on their own runs)."""
