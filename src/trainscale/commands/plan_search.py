"""The plan search behind ``trainscale plan``, as DataFrames.

:func:`plan_points` runs a :class:`~trainscale.study.plan.PlanRequest` through the study
machinery (the request as a study, :func:`~trainscale.study.plan.plan_study`; expansion and
filters, :func:`~trainscale.study.expand.expand_study`; simulation,
:func:`~trainscale.study.simulate.simulate_configurations`; the fastest plan per point,
:func:`~trainscale.study.report.select_rows`) and returns the study points table
(:func:`trainscale.tables.study_points.study_points`: its columns, from its code) with the
selected and simulated rows. :func:`plan_knees` gives the knee of each GPU's series
(:func:`trainscale.fits.knee.knee`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.fits.knee import knee
from trainscale.io.suggest import did_you_mean
from trainscale.names import Names
from trainscale.sim.calibration import Calibration
from trainscale.sim.catalogue import Catalogue
from trainscale.study.expand import expand_study
from trainscale.study.plan import PlanRequest, plan_study
from trainscale.study.report import ReportSpec, report_spec, select_rows
from trainscale.study.simulate import simulate_configurations
from trainscale.tables.study_points import study_points

__all__ = ["PlanResult", "plan_knees", "plan_points"]


@dataclass(frozen=True, slots=True)
class PlanResult:
    """A plan search's tables."""

    points: pd.DataFrame
    """The study points table: per GPU and GPU count the winning plan, its metrics with their
    80 % intervals, memory headroom, the runner-up and its margin."""
    selected: pd.DataFrame
    """The winning rows (:func:`trainscale.predict`'s columns, plus the series labels)."""
    simulated: pd.DataFrame
    """Every plan simulated that fits (the search space after its filters)."""
    spec: ReportSpec


def _check_names(request: PlanRequest, catalogue: Catalogue) -> None:
    if request.model not in catalogue.models:
        raise TrainscaleError(
            f"unknown model {request.model!r}{did_you_mean(request.model, catalogue.models)}"
        )
    for gpu in request.gpus:
        if gpu not in catalogue.hardware.gpus:
            raise TrainscaleError(
                f"unknown GPU {gpu!r}{did_you_mean(gpu, catalogue.hardware.gpus)}"
            )


def plan_points(
    request: PlanRequest, *, catalogue: Catalogue, calibration: Calibration
) -> PlanResult:
    """Search the request's plan space; return its tables (:class:`PlanResult`).

    Raises
    ------
    trainscale.errors.TrainscaleError
        An unknown model or GPU, a batch that does not divide, or no plan that fits."""
    _check_names(request, catalogue)
    study = plan_study(request)
    configurations, _ = expand_study(study, catalogue=catalogue, calibration=calibration)
    simulated, _ = simulate_configurations(
        configurations, study.filters, catalogue=catalogue, calibration=calibration
    )
    spec = report_spec(study, Names.of(catalogue.hardware, catalogue.models))
    selected = select_rows(simulated, spec)
    hbm = {key: gpu.hbm_bytes for key, gpu in catalogue.hardware.gpus.items()}
    points = study_points(selected, simulated, spec, hbm)
    return PlanResult(points, selected, simulated, spec)


def plan_knees(result: PlanResult) -> pd.DataFrame:
    """The knee of each GPU's winning plans (:func:`trainscale.fits.knee.knee`; series ``gpu``),
    with the winning plan (``knee_plan``) and global batch (``knee_global_batch``) at it."""
    selected = result.selected
    knees = knee(selected, ["gpu"], x=result.spec.x)
    plans = result.points.assign(gpu=selected["gpu"].to_numpy())
    at = plans.set_index(["gpu", result.spec.x])
    batch = selected.set_index(["gpu", result.spec.x])["global_batch"]
    knees["knee_plan"] = [
        at["plan"].get((g, x), "") if pd.notna(x) else "" for g, x in zip(
            knees["gpu"], knees["knee_x"], strict=True)
    ]  # fmt: skip
    knees["knee_global_batch"] = [
        batch.get((g, x)) if pd.notna(x) else None
        for g, x in zip(knees["gpu"], knees["knee_x"], strict=True)
    ]
    return knees
