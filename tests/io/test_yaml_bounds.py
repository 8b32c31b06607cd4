"""The one YAML loader is bounded: nesting depth, aliases expanded, YAML 1.1 numbers, and long
values cut in messages; every input that reads YAML (a study, a run manifest, a calibration
file) ends such a file as a named error, exit status 2, in well under a second."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from trainscale.errors import InputFileError
from trainscale.io.yaml import MAX_DEPTH, MAX_NODES, load_yaml, safe_load

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "data" / "runs" / "cpu_gloo_2rank_tiny"


def _laughs(levels: int, width: int = 10) -> str:
    """A billion-laughs document: each level ``width`` aliases of the one before."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(MAX_DEPTH + 1, 100_000), kind=st.sampled_from(["[", "{a: ", "- "]))
def test_deep_nesting_is_a_yaml_error_never_a_recursion_error(depth: int, kind: str) -> None:
    if kind == "- ":  # block nesting: the text grows as depth squared, keep it under 200 KB
        depth = MAX_DEPTH + 1 + depth % 300
        text = "".join("  " * i + "-\n" for i in range(depth)) + "  " * depth + "- 1\n"
    else:
        text = kind * depth + "1" + ("]" if kind == "[" else "}") * depth
    start = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match="nested more than"):
        safe_load(text)
    assert time.perf_counter() - start < 1  # flow brackets: refused before PyYAML's scanner


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(st.sampled_from("[]{}'\"#: ab,\n"), max_size=60),  # under 64 brackets
)
def test_the_bracket_prescan_never_refuses_a_shallow_document(text: str) -> None:
    try:
        safe_load(text)
    except yaml.YAMLError as error:
        assert "nested more than" not in str(error)


@settings(max_examples=20, deadline=None)
@given(levels=st.integers(6, 12), width=st.integers(10, 20))
def test_expanding_aliases_are_refused_fast(levels: int, width: int) -> None:
    start = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match=f"more than {MAX_NODES:,} values"):
        safe_load(_laughs(levels, width))
    assert time.perf_counter() - start < 1


def test_a_few_aliases_and_merge_keys_still_load() -> None:
    assert safe_load(_laughs(3)) is not None
    assert safe_load("a: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n") == {"a": {"x": 1}, "c": {"x": 2}}


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(yaml.YAMLError, match="inside the value it names"):
        safe_load("a: &a [1, *a]\n")


_YAML11 = st.one_of(
    st.from_regex(r"\A[-+]?0[0-7]{1,6}\Z"),  # octal in YAML 1.1
    st.from_regex(r"\A[1-9][0-9]?(:[0-5][0-9]){1,2}\Z"),  # base 60
    st.from_regex(r"\A0b[01]{1,8}\Z"),  # binary
    st.from_regex(r"\A[1-9]{1,3}(_[0-9]{3}){1,2}\Z"),  # digits with _
)


@settings(max_examples=200, deadline=None)
@given(value=_YAML11, key=st.from_regex(r"\A[a-z][a-z_]{0,10}\Z"), index=st.integers(0, 3))
def test_yaml11_numbers_are_errors_naming_the_key(value: str, key: str, index: int) -> None:
    items = ["8"] * index + [value]
    text = f"sweep:\n  {key}: [{', '.join(items)}]\n"
    with pytest.raises(yaml.YAMLError) as error:
        safe_load(text)
    assert f"key 'sweep.{key}[{index}]': {value} is a YAML 1.1 number" in str(error.value)


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False, allow_infinity=False, width=64),
    )
)
def test_yaml12_numbers_read_as_written(value: float) -> None:
    assert safe_load(f"x: {value!r}\n") == {"x": value}
    assert safe_load(f"x: '{value!r}'\n") == {"x": repr(value)}  # quoted: text


def test_yaml12_only_forms() -> None:
    assert safe_load("a: 1e3\nb: 0x80\nc: 0o17\nd: .5\ne: -.inf\n") == {
        "a": 1000.0,
        "b": 128,
        "c": 15,
        "d": 0.5,
        "e": float("-inf"),
    }


def test_a_long_value_is_cut_in_the_message(tmp_path: Path) -> None:
    study = tmp_path / "long.yaml"
    study.write_text("description: x\nfixed:\n  gpu: " + "h" * 1_000_000 + "\n")
    from trainscale.sim.catalogue import load_catalogue
    from trainscale.study.load import load_study

    catalogue = load_catalogue()
    with pytest.raises(InputFileError) as error:
        load_study(
            study,
            schema=REPO / "workflow" / "schemas" / "study.schema.yaml",
            hardware=catalogue.hardware,
            models=catalogue.models,
        )
    assert len(str(error.value)) < 5_000
    assert "more characters" in str(error.value)


@pytest.mark.parametrize(
    "text, match",
    [
        ("num_gpus: [8, 16, 32, 0100]\n", r"key 'sweep\.num_gpus\[3\]': 0100 is a YAML 1.1"),
        ("num_gpus: [1:40]\n", r"key 'sweep\.num_gpus\[0\]': 1:40 is a YAML 1.1 number \(base 60"),
        ("num_gpus: " + "[" * 500 + "]" * 500 + "\n", "nested more than"),
    ],
)
def test_a_study_names_file_line_and_key(tmp_path: Path, text: str, match: str) -> None:
    study = tmp_path / "s.yaml"
    study.write_text("description: x\nfixed: {model: llama2-7b}\nsweep:\n  " + text)
    with pytest.raises(InputFileError, match=rf"^{study}:4: invalid YAML: {match}"):
        load_yaml(study)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace("  software:\n", "  software: " + "[" * 500 + "]" * 500 + "\n"),
        lambda text: text + _laughs(9).replace("a0:", "x_a0:", 1),
        lambda text: text.replace("num_gpus: 2", "num_gpus: 02"),
    ],
    ids=["deep", "aliases", "octal"],
)
def test_ingest_of_a_hostile_run_yaml_is_exit_2(tmp_path: Path, damage, cli) -> None:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    manifest = run / "run.yaml"
    manifest.write_text(damage(manifest.read_text()))
    result = cli("ingest", str(run))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{manifest}:" in result.stderr and "invalid YAML" in result.stderr


def test_a_deep_calibration_file_is_exit_2(tmp_path: Path, cli) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text("[" * 500 + "]" * 500 + "\n")
    result = cli("predict", "--calibration", str(path), "--model", "llama2-7b")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "nested more than" in result.stderr
