"""What every per-study output reads, loaded once the same way (the study_fits, study_points and
study_figure rules): the GPU and model catalogues, the study file and its report spec."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from trainscale.names import Names
from trainscale.sim.model.shape import ModelShape, load_models
from trainscale.sim.system.hardware import HardwareCatalog, load_hardware
from trainscale.study.load import load_study
from trainscale.study.report import ReportSpec, report_spec
from trainscale.study.spec import Study

__all__ = ["StudyOutputInputs", "load_study_output_inputs"]


@dataclass(frozen=True, slots=True)
class StudyOutputInputs:
    """The catalogues, the study and what its outputs show."""

    hardware: HardwareCatalog
    models: Mapping[str, ModelShape]
    study: Study
    spec: ReportSpec


def load_study_output_inputs(
    study: str | os.PathLike[str],
    *,
    schema: str | os.PathLike[str],
    hardware: str | os.PathLike[str],
    models: str | os.PathLike[str],
) -> StudyOutputInputs:
    """Load the catalogue files ``hardware`` and ``models``, the study file ``study`` (checked
    against ``schema`` and the catalogues) and its :func:`~trainscale.study.report.report_spec`.

    Raises
    ------
    trainscale.errors.InputFileError
        A file that cannot be read or breaks its schema, naming the file and key.
    """
    gpus = load_hardware(hardware)
    shapes = load_models(models)
    loaded = load_study(study, schema=schema, hardware=gpus, models=shapes)
    return StudyOutputInputs(gpus, shapes, loaded, report_spec(loaded, Names.of(gpus, shapes)))
