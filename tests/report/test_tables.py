"""Tests of trainscale.report.tables: CSV round trip, Markdown, booktabs LaTeX, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.errors import TrainscaleError
from trainscale.report.tables import format_value, write_table


@pytest.fixture
def table():
    return pd.DataFrame(
        {
            "gpu": ["a100", "h100 | sxm_5"],
            "num_gpus": [128, 2048],
            "slope": [-0.123456789012345, 0.1 + 0.2],
            "n_star": [98.7654321, np.inf],
            "kappa": [1.234e-4, np.nan],
            "converged": [True, False],
        }
    )


def write(table, stem, **kwargs):
    kwargs.setdefault("caption", r"USL fits (95\% CI)")
    kwargs.setdefault("label", "tab:usl")
    return write_table(table, stem, **kwargs)


def test_csv_round_trips_exactly(table, tmp_path):
    csv, _, _ = write(table, tmp_path / "t")
    back = pd.read_csv(csv)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    assert back["slope"].tolist() == table["slope"].tolist()  # bit-exact floats
    assert b"\r\n" not in csv.read_bytes()


def test_markdown_is_a_github_pipe_table(table, tmp_path):
    _, md, _ = write(table, tmp_path / "t", decimals={"slope": 3}, float_format={"kappa": ".2e"})
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "| gpu | num_gpus | slope | n_star | kappa | converged |"
    assert lines[1] == "| --- | ---: | ---: | ---: | ---: | --- |"
    assert lines[2] == "| a100 | 128 | -0.123 | 98.77 | 1.23e-04 | yes |"
    assert lines[3] == r"| h100 \| sxm_5 | 2048 | 0.300 | ∞ | — | no |"
    assert len(lines) == 4


def test_latex_is_booktabs_with_caption_and_label(table, tmp_path):
    _, _, tex = write(table, tmp_path / "t", decimals=2)
    text = tex.read_text(encoding="utf-8")
    for token in (r"\toprule", r"\midrule", r"\bottomrule", r"\centering"):
        assert text.count(token) == 1, token
    assert r"\caption{USL fits (95\% CI)}" in text
    assert r"\label{tab:usl}" in text
    assert r"\begin{tabular}{lrrrrl}" in text
    assert r"gpu & num\_gpus & slope & n\_star & kappa & converged \\" in text
    assert r"a100 & 128 & -0.12 & 98.77 & 0.00 & yes \\" in text
    assert r"h100 | sxm\_5 & 2048 & 0.30 & $\infty$ & -- & no \\" in text
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")


def test_output_is_deterministic(table, tmp_path):
    first = write(table, tmp_path / "a" / "t")
    second = write(table, tmp_path / "b" / "t")
    assert [p.name for p in first] == ["t.csv", "t.md", "t.tex"]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()
    changed = table.assign(num_gpus=[128, 1024])
    third = write(changed, tmp_path / "c" / "t")
    assert all(a.read_bytes() != c.read_bytes() for a, c in zip(first, third, strict=True))


def test_failure_leaves_no_partial_output(table, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("template error")

    monkeypatch.setattr(pd.io.formats.style.Styler, "to_latex", broken)
    with pytest.raises(RuntimeError, match="template error"):
        write(table, tmp_path / "t")
    assert list(tmp_path.iterdir()) == []


def test_bad_formats_are_rejected_before_writing(table, tmp_path):
    with pytest.raises(TrainscaleError, match=r"unknown column\(s\) \['speed'\]"):
        write(table, tmp_path / "t", decimals={"speed": 1})
    with pytest.raises(TrainscaleError, match="duplicate column"):
        write(pd.DataFrame([[1, 2]], columns=["a", "a"]), tmp_path / "t")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("value", "spec", "expected"),
    [
        (122576.2796, None, "122576"),
        (98.7654321, None, "98.77"),
        (0.0199743, None, "0.01997"),
        (1.0017e-4, None, "1.002e-04"),
        (0.0, None, "0"),
        (0.5, ".1%", "50.0%"),
        (0.5, "{:.2f} x", "0.50 x"),
        (2.0, 0, "2"),
        (2.0, lambda v: f"<{v:g}>", "<2>"),
    ],
)
def test_format_value(value, spec, expected):
    assert format_value(value, spec) == expected
