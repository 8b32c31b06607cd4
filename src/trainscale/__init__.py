"""trainscale: what does adding GPUs buy when training a large language model?

A calibrated simulator of distributed LLM training (``predict``), an ingester for real cluster
logs (``trainscale.ingest``) and the library behind the Snakemake workflow.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "predict"]


def predict(configurations, *, calibration=None):
    """Predict step time, throughput, MFU, communication, memory and power per configuration.

    See :func:`trainscale.simulate.predict` for the columns in and out.
    """
    from trainscale.simulate import predict as _predict

    return _predict(configurations, calibration=calibration)
