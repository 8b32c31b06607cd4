"""The YAML loader reads its events from libyaml (trainscale.io.yaml.LibyamlLoader): the same
values and lines as PyYAML's pure-Python reader, PyYAML's own errors, and libyaml's reading of
the few texts that only libyaml reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from trainscale.io import yaml as trainscale_yaml
from trainscale.io.yaml import BoundedLoader, LibyamlLoader, compose, safe_load

REPO = Path(__file__).resolve().parents[2]

#: Every YAML file the repository ships: catalogues, calibration, config, studies, profiles,
#: schemas, sources, run manifests.
SHIPPED = sorted(
    path
    for folder in ("data", "config", "profiles", "workflow", "tests/data")
    for pattern in ("*.yaml", "*.yml")
    for path in (REPO / folder).rglob(pattern)
)


def _pure(text: str) -> object:
    return yaml.load(text, Loader=BoundedLoader)


def _marks(node: yaml.Node) -> list[tuple[str, str, int, int]]:
    """Every node of a tree, depth first: (kind, tag, line, column)."""
    out, stack = [], [node]
    while stack:
        node = stack.pop()
        out.append((type(node).__name__, node.tag, node.start_mark.line, node.start_mark.column))
        if isinstance(node, yaml.SequenceNode):
            stack += node.value
        elif isinstance(node, yaml.MappingNode):
            stack += [part for pair in node.value for part in pair]
    return out


def test_the_events_come_from_libyaml() -> None:
    # PyYAML's wheels carry libyaml; were it missing, every read would be 4-5x slower
    assert yaml.__with_libyaml__
    assert (LibyamlLoader, BoundedLoader) == trainscale_yaml._LOADERS


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_shipped_file_reads_as_pyyaml_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert repr(yaml.load(text, Loader=LibyamlLoader)) == repr(_pure(text))
    loader = BoundedLoader(text)
    try:
        pure_tree = loader.get_single_node()
    finally:
        loader.dispose()
    assert _marks(compose(text)) == _marks(pure_tree)  # the lines that messages name


def test_shipped_files_are_found() -> None:
    names = {path.relative_to(REPO).as_posix() for path in SHIPPED}
    assert {"data/hardware.yaml", "data/calibration.yaml", "config/config.yaml"} <= names
    assert "workflow/schemas/study.schema.yaml" in names


@pytest.mark.parametrize(
    "text",
    [
        'a: "unclosed\n',
        "a: 1\n b: 2\n",
        "a: [1, 2\n",
        "a: 1\na: 2\n",  # DuplicateKeyError
        "a: 0100\n",  # a YAML 1.1 number
        "a: &x [*x]\n",  # a recursive alias
        "a: b: c\n",
        "- a\nb: c\n",
        "a: \x07\n",  # a character PyYAML's reader refuses
    ],
)
def test_an_error_is_pyyamls_own(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as pure:
        _pure(text)
    with pytest.raises(yaml.YAMLError) as read:
        safe_load(text)
    assert type(read.value) is type(pure.value)
    assert str(read.value) == str(pure.value)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text("abcxyz_-: ?#[]{}", min_size=1, max_size=6), children, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(document=_DOCUMENTS, flow=st.sampled_from([None, True, False]), width=st.integers(8, 80))
def test_any_written_document_reads_as_pyyaml_reads_it(
    document: object, flow: bool | None, width: int
) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow, width=width, allow_unicode=True)
    try:
        expected = repr(_pure(text))
    except yaml.YAMLError as error:  # PyYAML 1.1 readings this loader refuses (``1e3``, ``0100``)
        with pytest.raises(yaml.YAMLError) as read:
            safe_load(text)
        assert str(read.value) == str(error)
    else:
        assert repr(safe_load(text)) == expected


@pytest.mark.parametrize(
    ("text", "libyaml"),
    [
        ("a: [what?]\n", {"a": ["what?"]}),  # PyYAML ends a plain scalar at "?" in brackets
        ("a:\tb\n", {"a": "b"}),  # a tab as a separator, as YAML 1.2 allows
    ],
)
def test_a_text_only_libyaml_reads_is_read_as_libyaml_reads_it(text: str, libyaml: object) -> None:
    with pytest.raises(yaml.YAMLError):
        _pure(text)
    assert safe_load(text) == libyaml
