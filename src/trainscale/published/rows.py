"""Published rows in the dataset schema: the throughput rows of the published measurements
(:func:`published_rows`, ``results/published.parquet``) and every CSV row predicted or rejected
(:func:`validation_rows`, ``results/validation.parquet``).

Re-exported by :mod:`trainscale.dataset`, the one dataset of every source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainscale.io.parquet import conform, conform_by_csv_row
from trainscale.published.measurements import PublishedData
from trainscale.schema import (
    DATASET_COLUMNS,
    VALIDATION_COLUMNS,
)
from trainscale.sim.configs import build_configs
from trainscale.sim.resolved import resolved_columns

if TYPE_CHECKING:
    from trainscale.sim.frameworks import FrameworkProfile
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["published_rows", "validation_rows"]


#: The configuration columns of a published row as the simulator resolves them
#: (:func:`trainscale.sim.resolved.resolved_columns`); the framework and its behaviours stay the
#: source's own (empty: the profile's).
_RESOLVED = (
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "global_batch",
    "micro_batch", "num_gpus", "gpus_per_node", "tp", "pp", "cp", "vpp", "dp", "grad_accum",
    "ep", "etp", "edp", "sequence_parallel", "mlp", "nic_gbit_per_s_per_gpu", "sharding",
    "recompute", "precision",
)  # fmt: skip


def _with_resolved_configuration(
    frame: pd.DataFrame,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    frameworks: Mapping[str, FrameworkProfile],
) -> pd.DataFrame:
    """Configuration and derived columns as the simulator resolves them (catalogue shape,
    default system, defaults); rows the validator rejects keep their own values."""
    configs, valid, _ = build_configs(
        frame, hardware=hardware, models=models, frameworks=frameworks, origin="published",
        skip_invalid=True,
    )  # fmt: skip
    out = frame.reset_index(drop=True).copy()
    resolved = resolved_columns(configs, _RESOLVED, framework_keys=tuple(frameworks))
    for name, values in resolved.items():
        current = (
            out[name].astype(object)
            if name in out.columns
            else pd.Series([None] * len(out), dtype=object)
        )
        current.iloc[valid] = list(values)
        out[name] = current
    return out


def published_rows(
    published: PublishedData,
    *,
    hardware: HardwareCatalog,
    models: Mapping[str, ModelShape],
    frameworks: Mapping[str, FrameworkProfile],
) -> pd.DataFrame:
    """The published throughput rows in the dataset schema (``source`` = ``published``).

    Configuration columns are resolved as the simulator would with the caller's catalogues
    (catalogue shapes, the GPU's default system where the source gives no network). Metrics:
    ``tokens_per_s_per_gpu`` is the published number converted to tokens/s per GPU with the
    source's FLOP convention
    (:func:`trainscale.published.measurements.observed_tokens_per_s_per_gpu`), ``tokens_per_s``
    that times ``num_gpus``, ``step_time_s`` the published step time where the source gives
    one; the other metrics are null. ``published_value`` is the source's own number in its own unit.
    """
    throughput = published.throughput
    if throughput.empty:
        return conform(pd.DataFrame(), DATASET_COLUMNS)
    frame = _with_resolved_configuration(throughput, hardware, models, frameworks)
    per_gpu = frame["observed_tokens_per_s_per_gpu"].to_numpy(dtype=float)
    own_value = pd.to_numeric(frame["published_value_text"], errors="coerce").to_numpy(float)
    is_step = (frame["published_metric"] == "step_time_ms").to_numpy(dtype=bool)
    frame["tokens_per_s_per_gpu"] = per_gpu
    frame["tokens_per_s"] = per_gpu * pd.to_numeric(frame["num_gpus"]).to_numpy(dtype=float)
    frame["step_time_s"] = np.where(is_step, own_value / 1e3, np.nan)
    frame["published_value"] = own_value
    return conform(frame, DATASET_COLUMNS, source="published", study="published")


def validation_rows(
    validated: Mapping[str, pd.DataFrame], *, calibration_id: str, simulator_version: str
) -> pd.DataFrame:
    """One row per line of the published CSV from
    :func:`trainscale.published.accuracy.validate_published`.

    Throughput rows (``kind`` ``throughput``, and ``moe_throughput`` for the CSV's
    mixture-of-experts lines) compare tokens/s per GPU, collective rows nccl-tests bus bandwidth
    (GB/s);
    rows the simulator cannot represent are kept with status ``rejected`` and their reason.
    Columns: :data:`VALIDATION_COLUMNS`; rows sorted by ``csv_row``.
    """
    parts = [
        frame.assign(
            status="predicted",
            kind=kind,
            quantity="tokens_per_s_per_gpu",
            unit="tokens/s",
            observed=frame["observed_tokens_per_s_per_gpu"],
            predicted=frame["predicted_tokens_per_s_per_gpu"],
        )
        for kind, frame in (
            ("throughput", validated["throughput"]),
            ("moe_throughput", validated.get("moe_throughput", pd.DataFrame())),
        )
        if not frame.empty
    ]
    collectives = validated["collectives"]
    if not collectives.empty:
        parts.append(
            collectives.assign(
                status="predicted", kind="collective", quantity="busbw_gbytes_per_s", unit="GB/s",
                observed=collectives["observed_busbw_gbytes_per_s"],
                predicted=collectives["predicted_busbw_gbytes_per_s"],
            )
        )  # fmt: skip
    rejects = validated["rejects"]
    if not rejects.empty:
        parts.append(rejects.assign(status="rejected"))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return conform_by_csv_row(
        frame,
        VALIDATION_COLUMNS,
        simulator_version=simulator_version,
        calibration_id=calibration_id,
    )
