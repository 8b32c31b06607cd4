"""The *plan*: how work is parallelised — validation of the parallel degrees, placement of the
parallel groups on nodes, and the two-stream schedule that decides what communication is hidden
(Calculon's split; one parallelism concept per module, as in torchtitan)."""
