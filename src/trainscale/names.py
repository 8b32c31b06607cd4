"""Readable names of catalogue keys, for every figure, table and note (``llama2-7b`` → ``Llama-2
7B``, ``h100-sxm-80gb`` → ``H100 80GB``).

The names are catalogue facts: each GPU's and model's ``label`` in ``data/hardware.yaml`` and
``data/models.yaml``. The caller passes the catalogue it was given (a figure's rule declares the
catalogue files it reads); nothing here holds a table of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainscale.sim.model.shape import ModelShape
    from trainscale.sim.system.hardware import HardwareCatalog

__all__ = ["Names", "gpu_label", "model_label"]


def model_label(key: str, models: Mapping[str, ModelShape]) -> str:
    """Readable model name: the ``label`` of ``key`` in ``models`` (the model catalogue,
    ``llama2-7b`` → ``Llama-2 7B``); a key the catalogue lacks is returned as given."""
    shape = models.get(str(key))
    return shape.label if shape is not None else str(key)


def gpu_label(key: str, hardware: HardwareCatalog) -> str:
    """Readable GPU name: the ``label`` of ``key`` in ``hardware`` (the GPU catalogue,
    ``h100-sxm-80gb`` → ``H100 80GB``); a key the catalogue lacks is returned as given."""
    return hardware.label(str(key))


@dataclass(frozen=True, slots=True)
class Names:
    """The readable names of the GPUs and models of one pair of catalogues, by key: what a
    study's figure and tables carry with them (:class:`trainscale.study.report.ReportSpec`)
    so that labelling a value needs no catalogue at hand. Empty: keys shown as given."""

    gpus: Mapping[str, str] = field(default_factory=dict)
    """GPU key → label (``data/hardware.yaml``)."""
    models: Mapping[str, str] = field(default_factory=dict)
    """Model key → label (``data/models.yaml``)."""

    @classmethod
    def of(cls, hardware: HardwareCatalog, models: Mapping[str, ModelShape]) -> Names:
        """The labels of every GPU of ``hardware`` and every model of ``models``."""
        return cls(
            gpus={key: gpu.label for key, gpu in hardware.gpus.items()},
            models={key: shape.label for key, shape in models.items()},
        )

    def label(self, column: str, key: str) -> str:
        """The label of ``key`` in column ``column`` (``gpu`` or ``model``); the key as given
        for another column or a key without a label."""
        table = {"gpu": self.gpus, "model": self.models}.get(column, {})
        return table.get(str(key), str(key))
