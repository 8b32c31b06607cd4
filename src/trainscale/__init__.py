"""trainscale: what does adding GPUs buy when training a large language model?

A calibrated simulator of distributed LLM training (:func:`predict`), an ingester for real cluster
logs (:mod:`trainscale.ingest`, :mod:`trainscale.runs`) and the library behind the Snakemake
workflow. ``trainscale.predict(df) -> df`` is the simulator; see :mod:`trainscale.simulate`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from trainscale.simulate import predict  # after __version__: simulate imports it

__all__ = ["__version__", "predict"]
