"""The presentation tables: what trainscale.tables writes to reports/tables/<name>.{csv,md,tex}
and reports/studies/<study>/fits.{csv,md,tex}, each table's columns in order (the CSV keeps
full precision; Markdown and LaTeX print the same columns formatted)."""

from __future__ import annotations

from trainscale.schema.column import Column
from trainscale.schema.dictionary import table

HARDWARE_COLUMNS: tuple[Column, ...] = table("HARDWARE_COLUMNS")
"""Columns of table ``hardware`` (:func:`trainscale.tables.hardware.hardware_table`): one row per
GPU of the catalogue in catalogue (generation) order, and each quantity's growth over the V100."""

MODEL_COLUMNS: tuple[Column, ...] = table("MODEL_COLUMNS")
"""Columns of table ``models`` (:func:`trainscale.tables.models.models_table`): one row per model of
the catalogue, smallest first; parameter counts derived from the shape."""

CLAIMS_TABLE_COLUMNS: tuple[Column, ...] = table("CLAIMS_TABLE_COLUMNS")
"""Columns of table ``claims`` (:mod:`trainscale.tables.claims`): those of
``results/paper/claims.parquet`` without the claim's key and the provenance (the calibration id is
in the caption)."""

CLAIM_SENSITIVITY_TABLE_COLUMNS: tuple[Column, ...] = table("CLAIM_SENSITIVITY_TABLE_COLUMNS")
"""Columns of table ``claim_sensitivity`` (:mod:`trainscale.tables.claim_sensitivity`): those of
``results/paper/claim_sensitivity.parquet`` without the calibration ids (the calibrated row's is in
the caption)."""

FIT_COLUMNS: tuple[Column, ...] = table("FIT_COLUMNS")
"""Columns of every fit row (:func:`trainscale.fits.scaling.fit_scaling_series`), in order: the
log-log slope of a per-GPU metric or one parameter of the Universal Scalability Law."""

SCALING_SERIES_COLUMNS: tuple[Column, ...] = table("SCALING_SERIES_COLUMNS")
"""The columns that name a series of table ``scaling_fits``: rows that share them differ only in
their GPU count."""

SCALING_FIT_COLUMNS: tuple[Column, ...] = table("SCALING_FIT_COLUMNS")
"""Columns of table ``scaling_fits`` (:func:`trainscale.tables.scaling_fits.scaling_fits`): one row
per series, metric and parameter."""

STUDY_FIT_COLUMNS: tuple[Column, ...] = table("STUDY_FIT_COLUMNS")
"""Columns of a study's fits table ``reports/studies/<study>/fits``
(:func:`trainscale.tables.study_fits.study_fits`), after the study's own facet and series columns
(readable text); ``facet`` only when the study has a facet."""

VALIDATION_TABLE_COLUMNS: tuple[Column, ...] = table("VALIDATION_TABLE_COLUMNS")
"""Columns of table ``validation`` (:func:`trainscale.tables.validation.validation_table`): the
simulator's error per published source, held out first, then in sample, then what could not be
predicted."""

BEST_PLAN_COLUMNS: tuple[Column, ...] = table("BEST_PLAN_COLUMNS")
"""Columns of table ``best_plans`` (:func:`trainscale.tables.best_plans.best_plans`): the fastest
plan that fits in memory per model, GPU and GPU count; models smallest first."""

PILOTS_TABLE_COLUMNS: tuple[Column, ...] = table("PILOTS_TABLE_COLUMNS")
"""Columns of table ``pilots`` (:func:`trainscale.tables.pilots.summary`, also what ``trainscale
validate --pilots`` prints): per source, then ``all``, the errors of the pilot-calibrated
prediction, of the base and of perfect weak scaling, and the pilot interval's coverage."""
