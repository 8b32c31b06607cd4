"""The simulator: catalogues, calibration and a configuration table in, a result table out.

Split as Calculon splits it: :mod:`.model` (what is computed: shape, FLOPs, bytes, memory),
:mod:`.system` (hardware, network collectives, power), :mod:`.plan` (how the work is parallelised
and scheduled) and :mod:`.frameworks` (what each software stack does). :mod:`.configs` validates a
configuration table, :mod:`.simulate` runs it, :mod:`.calibration` holds the free parameters,
:mod:`.intervals` the prediction intervals and :mod:`.network` the one calibrated network builder.
The catalogues and the calibration are passed in by the caller.
"""
