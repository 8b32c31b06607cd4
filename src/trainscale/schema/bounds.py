"""The plausible range of every numeric input column."""

from __future__ import annotations

from dataclasses import dataclass

#: The most GPUs one configuration may have: 2^20 = 1,048,576, several times any cluster built or
#: announced; above it the simulator's integer arithmetic (dp, batches) is meaningless (from 2^53
#: a float64 cannot even hold the count).
MAX_GPUS = 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """The plausible range of one numeric input column, inclusive at both ends."""

    low: float
    """Smallest allowed value (in the column's unit)."""
    high: float
    """Largest allowed value (in the column's unit)."""
    integer: bool
    """Whole numbers only (counts, sizes, degrees)."""
    noun: str
    """What the number counts, for messages: ``1e+19 is above the limit of 1,048,576 GPUs``."""
    why: str
    """Why the range is what it is (written into docs/bad-input.md)."""

    def allowed(self) -> str:
        """The range in words, e.g. ``a whole number from 1 to 1,048,576``."""
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} from {format_number(self.low)} to {format_number(self.high)}"


def format_number(value: float) -> str:
    """A bound as people write it: ``1,048,576``, ``0.5``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


#: Plausible range of every numeric column of a configuration table (``trainscale predict``,
#: studies, the published CSV's matching columns): a value outside is an error naming the file,
#: row, column and this range. The integer ranges are far above any model or run published and
#: keep every product the simulator forms in int64 (the largest, ``global_batch * seq_len``
#: tokens per step, stays below 2^54; ``layers * params_per_layer`` below 2^58): no value
#: allowed here can overflow. ``gpus_per_node``, ``nic_gbit_per_s_per_gpu`` and ``power_limit_w``
#: also accept 0 or empty for "the default" (the GPU's catalogue system, its TDP).
#: Plausible range of ``capacity_factor`` (mixture-of-experts rows with capacity routing only,
#: so not a column every result carries like those of :data:`NUMERIC_BOUNDS`).
CAPACITY_FACTOR_BOUND = Bound(
    low=0.01, high=1_000, integer=False, noun="",
    why="published runs use 1 to 2; above num_experts / top-k nothing is ever dropped",
)  # fmt: skip

NUMERIC_BOUNDS: dict[str, Bound] = {
    "layers": Bound(low=1, high=10_000, integer=True, noun="layers",
                    why="the deepest published models have about 200 blocks"),
    "hidden": Bound(low=1, high=2**20, integer=True, noun="",
                    why="widest published models: h = 2^14 to 2^15"),
    "heads": Bound(low=1, high=2**16, integer=True, noun="heads",
                   why="published models use at most a few hundred heads"),
    "kv_heads": Bound(low=1, high=2**16, integer=True, noun="heads", why="as heads"),
    "ffn": Bound(low=1, high=2**22, integer=True, noun="",
                 why="MLP widths of published models are below 2^17"),
    "vocab": Bound(low=1, high=2**24, integer=True, noun="tokens",
                   why="published vocabularies hold at most about 2^18 tokens"),
    "seq_len": Bound(low=1, high=2**24, integer=True, noun="tokens",
                     why="16.8 M tokens, above the longest contexts trained (about 10^6 to 10^7)"),
    "global_batch": Bound(low=1, high=2**30, integer=True, noun="sequences",
                          why="global_batch * seq_len stays below 2^54 tokens per step"),
    "micro_batch": Bound(low=1, high=2**30, integer=True, noun="sequences",
                         why="at most the global batch's bound"),
    "num_gpus": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs",
                      why="2^20, several times any cluster built or announced"),
    "gpus_per_node": Bound(low=1, high=1024, integer=True, noun="GPUs",
                           why="the largest NVLink domains announced hold 576 GPUs"),
    "tp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "pp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "cp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "ep": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "etp": Bound(low=1, high=MAX_GPUS, integer=True, noun="GPUs", why="at most num_gpus"),
    "vpp": Bound(low=1, high=10_000, integer=True, noun="stages",
                 why="pp * vpp may not exceed layers"),
    "nic_gbit_per_s_per_gpu": Bound(
        low=1, high=100_000, integer=False, noun="Gb/s",
        why="1 Gb/s Ethernet to 100 Tb/s per GPU; NICs shipped today run 100 to 1,600 Gb/s",
    ),
    "power_limit_w": Bound(
        low=1, high=10_000, integer=False, noun="W",
        why="a wide frame; each GPU's own range is checked too: above its idle power, at most "
        "its TDP (data/hardware.yaml)",
    ),
}  # fmt: skip
