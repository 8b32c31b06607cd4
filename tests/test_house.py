"""The house rules of ``src/trainscale`` (docs/reference/layout.md): no module over 500 lines and
no function over 80, unless its docstring says why ("long because")."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "trainscale"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
EXCUSE = "long because"


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_over_500_lines():
    long = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        tree = ast.parse(text)
        if lines > MAX_MODULE_LINES and EXCUSE not in (ast.get_docstring(tree) or ""):
            long.append(f"{path.relative_to(SRC)}: {lines} lines")
    assert not long, "modules over 500 lines without a 'long because' docstring: " + "; ".join(long)


def test_no_function_over_80_lines():
    long = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES and EXCUSE not in (ast.get_docstring(node) or ""):
                long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {length} lines")
    assert not long, "functions over 80 lines without a 'long because' docstring: " + "; ".join(
        long
    )
