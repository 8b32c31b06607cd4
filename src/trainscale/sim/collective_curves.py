"""The collective cost model's curves: ``results/collectives.parquet``.

Time and nccl-tests bus bandwidth of AllReduce, AllGather and ReduceScatter for each GPU in its
default system, over a sweep of message sizes and node counts, with the network ``trainscale
predict`` builds (:func:`trainscale.sim.network.default_network`: achieved NVLink, NIC and NVLS
bandwidths, NCCL latencies, fabric congestion and pipeline fill, all from the calibration). Two
kinds of message: the nccl-tests sweep (1 KiB to 16 GiB, four sizes per octave; ``model`` is
``''``) and one transformer block of each catalogue model in bf16, what FSDP gathers and
scatters per layer (``model`` is its key). Each is given twice: the collective's time
(``term == "total"``) and the same collective with NCCL's per-step latencies set to zero (its
bandwidth term, ``term == "bandwidth"``); their difference is the latency term.

The figures ``collective_bandwidth`` and ``collective_scaling`` draw from this table (columns
:data:`trainscale.schema.COLLECTIVE_CURVE_COLUMNS`); they never evaluate the model themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from trainscale.schema import COLLECTIVE_CURVE_COLUMNS, names
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.sim.model.params import matrix_params_per_layer
from trainscale.sim.model.shape import ModelShape
from trainscale.sim.network import default_network
from trainscale.sim.system.collectives import allgather_time, allreduce_time, reducescatter_time
from trainscale.version import __version__

__all__ = [
    "BUSBW_FACTORS",
    "LAYER_BYTES_PER_PARAM",
    "NODE_COUNTS",
    "SIZES_BYTES",
    "collective_curves",
    "layer_bytes",
]

#: Message sizes of the sweep: 1 KiB to 16 GiB, four per octave (bytes).
SIZES_BYTES: np.ndarray = 2.0 ** np.arange(10, 34.01, 0.25)

#: Node counts: every power of two from 1 to 512 nodes (published nccl-tests runs span 1 to
#: 1,024 nodes; 512 nodes of 8 GPUs is the 4,096 GPUs of the widest figure).
NODE_COUNTS: tuple[int, ...] = tuple(2**k for k in range(10))

#: Bytes per parameter of a layer's message: bf16 weights and gradients, as the simulator moves
#: them.
LAYER_BYTES_PER_PARAM = 2.0

_TIME: dict[str, Callable[..., np.ndarray]] = {
    "allreduce": allreduce_time,
    "allgather": allgather_time,
    "reducescatter": reducescatter_time,
}

#: Collective → bus-bandwidth factor f(n) (nccl-tests doc/PERFORMANCE.md): busbw = size / time
#: * f(n).
BUSBW_FACTORS: dict[str, Callable[[float], float]] = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
}


def layer_bytes(shape: ModelShape) -> float:
    """Bytes of one transformer block's weights in bf16 (what FSDP gathers per layer)."""
    params = matrix_params_per_layer(shape.transformer)
    return float(params) * LAYER_BYTES_PER_PARAM


def collective_curves(
    calibration: Calibration,
    *,
    catalogue: Catalogue,
    gpus: Sequence[str],
    models: Mapping[str, ModelShape],
    sizes_bytes: np.ndarray = SIZES_BYTES,
    node_counts: Sequence[int] = NODE_COUNTS,
) -> pd.DataFrame:
    """Time and bus bandwidth of each collective, by GPU, message and node count.

    Parameters
    ----------
    calibration : Calibration
        Builds each GPU's network (:func:`trainscale.sim.network.default_network`).
    catalogue : Catalogue
        The hardware and NCCL constants that network is built from.
    gpus : sequence of str
        GPU catalogue keys, each in its default system.
    models : mapping of str to ModelShape
        The models whose per-layer message (:func:`layer_bytes`) is added to the sweep; only the
        dense ones (:attr:`~trainscale.sim.model.shape.ModelShape.plain`): FSDP gathers a dense
        block whole, while an MoE block's experts are sharded by expert parallelism.
    sizes_bytes : numpy.ndarray, default :data:`SIZES_BYTES`
        Message sizes of the sweep (bytes, the whole buffer as nccl-tests counts it).
    node_counts : sequence of int, default :data:`NODE_COUNTS`

    Returns
    -------
    pandas.DataFrame
        :data:`trainscale.schema.COLLECTIVE_CURVE_COLUMNS`, in the order GPU, collective, term,
        node count, then the sweep's sizes ascending and the models' layers in catalogue order.
    """
    models = {key: shape for key, shape in models.items() if shape.plain}
    sizes = np.concatenate(
        [np.asarray(sizes_bytes, dtype=float), [layer_bytes(s) for s in models.values()]]
    )
    model = [""] * len(sizes_bytes) + list(models)
    frames = []
    for gpu in gpus:
        net, per_node = default_network(gpu, calibration, catalogue=catalogue)
        terms = {"total": net, "bandwidth": dataclasses.replace(net, latency_scale=0.0)}
        for collective, time_fn in _TIME.items():
            for term, network in terms.items():
                for nodes in node_counts:
                    n = float(nodes * per_node)
                    t = np.asarray(time_fn(sizes, n, per_node, network), dtype=float)
                    factor = BUSBW_FACTORS[collective](n)
                    frames.append(
                        pd.DataFrame(
                            {
                                "gpu": gpu,
                                "gpus_per_node": per_node,
                                "collective": collective,
                                "model": model,
                                "size_bytes": sizes,
                                "num_nodes": int(nodes),
                                "num_gpus": int(n),
                                "term": term,
                                "time_s": t,
                                "busbw_gbytes_per_s": sizes / t * factor / 1e9,
                            }
                        )
                    )
    table = pd.concat(frames, ignore_index=True)
    table["calibration_id"] = calibration.calibration_id
    table["simulator_version"] = __version__
    return table[names(COLLECTIVE_CURVE_COLUMNS)]
