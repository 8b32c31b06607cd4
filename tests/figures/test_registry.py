"""The registries of figures and tables (trainscale.figures.FIGURES, trainscale.tables.TABLES):
what each output reads, as the workflow's two wildcard rules declare it."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from trainscale.figures import FIGURES
from trainscale.report.registry import CATALOGUES, KIND_CATALOGUES
from trainscale.sim.catalogue import CATALOGUE_FILES
from trainscale.tables import TABLES

REGISTRIES = {"figure": FIGURES, "table": TABLES}
OUTPUTS = [(kind, name) for kind, registry in REGISTRIES.items() for name in registry]

#: What rules/common.smk maps a registry's file name to (PRESENTATION_FILES, or sim/<study>).
FILES = {
    "validation", "holdout", "dataset", "published", "collectives", "sim_vs_measured",
    "paper/claims", "paper/claim_sensitivity", "paper/energy", "pilots",
}  # fmt: skip


@pytest.mark.parametrize(("kind", "name"), OUTPUTS)
def test_render_takes_exactly_the_registered_inputs(kind: str, name: str) -> None:
    output = REGISTRIES[kind][name]
    render = importlib.import_module(f"trainscale.{kind}s.{name}").render
    parameters = list(inspect.signature(render).parameters.values())[1:]  # after the stem
    required = {p.name for p in parameters if p.default is inspect.Parameter.empty}
    given = {*output.inputs, *output.catalogues}
    assert required <= given <= {p.name for p in parameters}
    # the catalogues it takes are required keywords: nothing falls back to the shipped files
    keywords = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(output.catalogues) <= required & keywords


@pytest.mark.parametrize(("kind", "name"), OUTPUTS)
def test_every_input_is_a_file_the_workflow_knows(kind: str, name: str, repo_root) -> None:
    output = REGISTRIES[kind][name]
    assert set(output.catalogues) <= set(output.catalogue_files()) <= set(CATALOGUES)
    assert not set(output.inputs) & set(output.catalogue_files())  # one named input each
    common = (repo_root / "rules" / "common.smk").read_text()
    for spec in output.inputs.values():
        if spec.file.startswith("sim/"):
            study = spec.file.removeprefix("sim/")
            assert (repo_root / "config" / "studies" / f"{study}.yaml").is_file(), spec.file
        else:
            assert spec.file in FILES and f'"{spec.file}":' in common, spec.file


@pytest.mark.parametrize(("kind", "name"), OUTPUTS)
def test_every_output_has_its_report_caption(kind: str, name: str, repo_root) -> None:
    caption = repo_root / "workflow" / "report" / f"{kind}s" / f"{name}.rst"
    assert caption.read_text().strip()
    assert "{{" not in caption.read_text()  # printed as text by workflow/report/<kind>.rst


def test_names_are_valid_wildcard_values() -> None:
    for registry in REGISTRIES.values():
        assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in registry)


def test_catalogue_files_are_those_render_takes_and_those_its_inputs_are_read_with() -> None:
    assert set(CATALOGUES) == set(CATALOGUE_FILES)
    assert FIGURES["collective_bandwidth"].catalogues == ("hardware",)
    assert FIGURES["collective_bandwidth"].catalogue_files() == KIND_CATALOGUES["published"]
    assert FIGURES["collective_scaling"].catalogue_files() == ("hardware", "models")
    assert FIGURES["compute_per_gpu"].catalogue_files() == ("hardware", "models")
    assert TABLES["claims"].catalogue_files() == ()
