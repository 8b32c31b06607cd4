"""Files in and out, below every stage: YAML with line numbers (:mod:`.yaml`), Parquet tables with
explicit schemas (:mod:`.parquet`), user tables as CSV or Parquet (:mod:`.tables`) and the one
atomic writer (:mod:`.atomic`). Imports nothing of trainscale but the vocabulary
(:mod:`trainscale.schema`, :mod:`trainscale.errors`, :mod:`trainscale.paths`)."""
