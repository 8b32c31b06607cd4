"""`trainscale ingest --help` names every log kind a run manifest accepts and the docs page."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainscale.cli import main
from trainscale.commands.ingest import LOG_KINDS
from trainscale.io.yaml import load_yaml

REPO = Path(__file__).resolve().parents[2]


def _schema_kinds() -> list[str]:
    schema = load_yaml(REPO / "workflow" / "schemas" / "run.schema.yaml")
    return list(schema["properties"]["logs"]["items"]["properties"]["kind"]["enum"])


def test_log_kinds_are_the_schemas() -> None:
    assert list(LOG_KINDS) == _schema_kinds()
    assert all(text.strip() for text in LOG_KINDS.values())


def test_help_lists_each_kind_with_its_line_and_the_docs_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["ingest", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for kind in _schema_kinds():
        (line,) = [x for x in lines if x.split()[:1] == [kind]]
        assert LOG_KINDS[kind] in line  # one line each, not wrapped away
    assert "docs/ingest/formats.md" in out
    assert (REPO / "docs" / "ingest" / "formats.md").is_file()
