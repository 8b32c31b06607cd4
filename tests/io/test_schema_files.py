"""The workflow's schema files (workflow/schemas) are valid JSON Schemas: checked here, once,
as the workflow's code is, not by every process that validates a file against one
(trainscale.io.schema.validator)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from trainscale.io.yaml import load_yaml

SCHEMAS = sorted((Path(__file__).resolve().parents[2] / "workflow" / "schemas").glob("*.yaml"))


def test_every_input_has_its_schema() -> None:
    names = {path.name.removesuffix(".schema.yaml") for path in SCHEMAS}
    assert names == {
        "config",
        "frameworks",
        "hardware",
        "models",
        "nccl",
        "run",
        "sources",
        "study",
    }


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda path: path.name)
def test_each_schema_is_a_valid_draft_2020_12_schema(path: Path) -> None:
    Draft202012Validator.check_schema(load_yaml(path))


def test_the_check_refuses_a_broken_schema() -> None:
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "object", "properties": {"a": {"type": 5}}})
