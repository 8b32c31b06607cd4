"""Write one table as CSV (full precision), GitHub Markdown and a booktabs LaTeX fragment.

The CSV keeps every value at full precision (for machines); the Markdown and LaTeX files show
the formatted values (for people and the paper, which loads the fragment with ``\\input{}`` and
needs ``\\usepackage{booktabs}``). All three are written deterministically and atomically.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from trainscale.errors import TrainscaleError
from trainscale.io.atomic import atomic_paths, with_suffix

__all__ = ["TABLE_FORMATS", "format_value", "write_table"]

#: Files :func:`write_table` writes, in order.
TABLE_FORMATS: tuple[str, ...] = ("csv", "md", "tex")

FloatFormat = str | Callable[[float], str]

_NA = {"md": "—", "tex": "--"}
_INF = {"md": "∞", "tex": r"$\infty$"}
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def format_value(value: float, spec: FloatFormat | int | None = None) -> str:
    """Format one finite number for display.

    Parameters
    ----------
    value : float
        The number (finite).
    spec : str, callable, int or None
        ``int``: that many decimals; ``str``: a format spec (``".2f"``) or a format string
        (``"{:.1%}"``); callable: called with the value; ``None``: four significant digits
        without exponent for magnitudes in [1e-3, 1e6), else ``"{:.3e}"``.

    Returns
    -------
    str
    """
    if isinstance(spec, bool):
        raise TrainscaleError(f"format_value: decimals must be an int, got {spec!r}")
    if isinstance(spec, int):
        return f"{value:.{spec}f}"
    if isinstance(spec, str):
        return spec.format(value) if "{" in spec else format(value, spec)
    if callable(spec):
        return str(spec(value))
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if 1e-3 <= magnitude < 1e6:
        decimals = max(0, 3 - math.floor(math.log10(magnitude)))
        return f"{value:.{decimals}f}"
    return f"{value:.3e}"


def write_table(
    df: pd.DataFrame,
    stem: str | os.PathLike[str],
    *,
    caption: str,
    label: str,
    decimals: int | Mapping[str, int] | None = None,
    float_format: Mapping[str, FloatFormat] | None = None,
) -> tuple[Path, Path, Path]:
    """Write ``df`` as ``stem.csv``, ``stem.md`` and ``stem.tex``.

    Parameters
    ----------
    df : pandas.DataFrame
        The table; its index is not written (reset it first to keep it). Rows and columns are
        written in the given order.
    stem : str or os.PathLike
        Output path without suffix, e.g. ``reports/tables/usl_fits``; folders are created.
    caption : str
        LaTeX caption, written as given (it may contain LaTeX markup).
    label : str
        LaTeX label, e.g. ``"tab:usl_fits"``.
    decimals : int or mapping of column → int, optional
        Decimals of float columns in the Markdown and LaTeX files (all columns, or per
        column). Columns without a value get four significant digits (:func:`format_value`).
    float_format : mapping of column → str or callable, optional
        Per-column format spec (``".1f"``), format string (``"{:.1%}"``) or callable; wins
        over ``decimals``.

    Returns
    -------
    tuple of pathlib.Path
        ``(csv, md, tex)`` paths.

    Notes
    -----
    - CSV: ``DataFrame.to_csv(index=False)`` with ``\\n`` line ends; floats at full precision
      (``pandas.read_csv(path)`` gives them back bit for bit), missing as empty, infinities as
      ``inf``, booleans as ``True``/``False``.
    - Markdown: a GitHub pipe table; numeric columns right-aligned; missing values "—",
      infinities "∞"; ``|`` in text escaped.
    - LaTeX: pandas Styler ``to_latex(hrules=True, caption=..., label=...,
      position_float="centering")`` — a ``table`` float with a booktabs ``tabular``
      (``\\toprule``/``\\midrule``/``\\bottomrule``); text and headers LaTeX-escaped, missing
      values "--", infinities ``$\\infty$``; numeric columns right-aligned.
    """
    if not isinstance(df, pd.DataFrame):
        raise TrainscaleError(f"write_table: expected a pandas DataFrame, got {type(df).__name__}")
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        raise TrainscaleError(f"write_table: duplicate column names in {columns}")
    unknown = sorted((set(float_format or {}) | set(_per_column(decimals, []))) - set(columns))
    if unknown:
        raise TrainscaleError(f"write_table: format given for unknown column(s) {unknown}")
    table = df.reset_index(drop=True)
    table.columns = columns
    specs = _specs(table, decimals, float_format)
    numeric = [_is_numeric(table[c]) for c in columns]
    targets = [with_suffix(stem, f".{ext}") for ext in TABLE_FORMATS]
    with atomic_paths(targets) as (csv_tmp, md_tmp, tex_tmp):
        table.to_csv(csv_tmp, index=False, lineterminator="\n")
        md_tmp.write_text(_markdown(table, specs, numeric), encoding="utf-8", newline="\n")
        tex = _latex(table, specs, numeric, caption=caption, label=label)
        tex_tmp.write_text(tex, encoding="utf-8", newline="\n")
    return targets[0], targets[1], targets[2]


def _per_column(decimals: int | Mapping[str, int] | None, columns: list[str]) -> dict[str, int]:
    if decimals is None:
        return {}
    if isinstance(decimals, Mapping):
        return dict(decimals)
    return dict.fromkeys(columns, decimals)


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _specs(
    table: pd.DataFrame,
    decimals: int | Mapping[str, int] | None,
    float_format: Mapping[str, FloatFormat] | None,
) -> dict[str, FloatFormat | int | None]:
    """Display spec per column: float_format, else decimals (float columns), else None."""
    float_columns = [c for c in table.columns if pd.api.types.is_float_dtype(table[c])]
    specs: dict[str, FloatFormat | int | None] = dict.fromkeys(table.columns)
    specs.update(_per_column(decimals, float_columns))
    specs.update(float_format or {})
    return specs


def _cell(value: object, spec: FloatFormat | int | None, flavour: str) -> str:
    """Display string of one cell for ``flavour`` "md" or "tex" (text not yet escaped)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return _NA[flavour]
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)) and spec is None:
        return str(int(value))
    if isinstance(value, (float, np.floating, int, np.integer)):
        number = float(value)
        if math.isinf(number):
            return ("" if number > 0 else "-") + _INF[flavour]
        return format_value(number, spec)
    return str(value)


def _markdown(table: pd.DataFrame, specs: dict, numeric: list[bool]) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", r"\|") for c in cells) + " |"

    lines = [
        row(list(table.columns)),
        "| " + " | ".join("---:" if num else "---" for num in numeric) + " |",
    ]
    for values in table.itertuples(index=False, name=None):
        lines.append(
            row([_cell(v, specs[c], "md") for v, c in zip(values, table.columns, strict=True)])
        )
    return "\n".join(lines) + "\n"


def _escape_latex(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)


def _latex(
    table: pd.DataFrame, specs: dict, numeric: list[bool], *, caption: str, label: str
) -> str:
    shown = pd.DataFrame(
        {
            c: [
                _cell(v, specs[c], "tex") if num else _escape_latex(_cell(v, specs[c], "tex"))
                for v in table[c].tolist()
            ]
            for c, num in zip(table.columns, numeric, strict=True)
        },
        columns=list(table.columns),
    )
    styler = shown.style.hide(axis="index").format_index(escape="latex", axis=1)
    return styler.to_latex(
        column_format="".join("r" if num else "l" for num in numeric),
        hrules=True,
        caption=caption,
        label=label,
        position_float="centering",
    )
