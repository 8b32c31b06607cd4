"""trainscale: what does adding GPUs buy when training a large language model?

A calibrated simulator of distributed LLM training (:func:`predict`), an ingester for real cluster
logs (:mod:`trainscale.ingest`, :mod:`trainscale.ingest.runs`) and the library behind the Snakemake
workflow. ``trainscale.predict(df) -> df`` is the simulator; see :mod:`trainscale.sim.simulate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainscale.version import __version__

if TYPE_CHECKING:
    from trainscale.sim.simulate import predict

__all__ = ["__version__", "predict"]


def __getattr__(name: str) -> Any:
    """``trainscale.predict``, imported on first use: the simulator pulls in pandas and scipy,
    which a process that only ingests logs, draws a figure or runs the harness does not need."""
    if name == "predict":
        from trainscale.sim.simulate import predict

        return predict
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
