"""Catalogues and calibration are values passed in by the caller (README, "Catalogues are inputs").

Below the command layer no library function loads a catalogue, the calibration or the published
measurements on its own: it takes them as parameters, and only a caller at the top (a command, a
workflow script, a test) loads the shipped ones. This test reads the library's source and lists
every place that could load one without being told which file: a loader called without a path,
``data_dir()``, or a simulation (``predict``, ``predict_with_rejects``) called without the
catalogue or the calibration. The few that may, and why, are listed in :data:`ALLOWED`.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "trainscale"

#: The library below the command layer, presentation included: the figures and tables (and
#: their style and fits) get the catalogues they read from their caller, the workflow's script.
LIBRARY = [
    *(SRC / "sim").rglob("*.py"),
    *(SRC / "study").rglob("*.py"),
    *(SRC / "paper").rglob("*.py"),
    *(SRC / "published").rglob("*.py"),
    *(SRC / "calibrate").rglob("*.py"),
    *(SRC / "ingest").rglob("*.py"),
    *(SRC / "figures").rglob("*.py"),
    *(SRC / "tables").rglob("*.py"),
    *(SRC / "fits").rglob("*.py"),
    *(SRC / "report").rglob("*.py"),
    *(SRC / "schema").rglob("*.py"),
    SRC / "dataset.py",
]

#: Loaders of a catalogue, the calibration or the published measurements: called without a path,
#: each loads the shipped file.
LOADERS = {
    "load_hardware", "load_models", "load_frameworks", "load_nccl_constants", "load_catalogue",
    "load_calibration", "load_published", "load_power_terms",
}  # fmt: skip
#: Simulations: without ``catalogue=`` and ``calibration=`` they use the shipped ones.
SIMULATIONS = {"predict", "predict_with_rejects"}

#: (file, enclosing function) -> why it may use the shipped files.
ALLOWED = {
    **{
        (f"sim/{path}", name): "the loader's default: the shipped file"
        for path, name in (
            ("system/hardware.py", "load_hardware"), ("model/shape.py", "load_models"),
            ("frameworks.py", "load_frameworks"), ("system/collectives.py", "load_nccl_constants"),
            ("calibration.py", "load_calibration"), ("catalogue.py", "load_catalogue"),
        )
    },
    ("sim/energy/terms.py", "load_power_terms"): "the loader's default: the shipped "
    "calibration's power block",
    ("published/measurements.py", "load_published"): "the loader's default: the shipped "
    "measurements CSV (the catalogues it is read with are the caller's)",
    ("published/memory.py", "load_memory_figures"): "the loader's default: the shipped "
    "published memory figures CSV",
    ("sim/simulate.py", "_given_or_shipped"): "trainscale.predict and predict_with_rejects: the "
    "public entry point loads the shipped files for a user who gives none",
    ("calibrate/shipped.py", "calibrate"): "where `trainscale calibrate` writes by default",
    ("calibrate/pilot_examples.py", "<module>"): "python -m trainscale.calibrate.pilot_examples: "
    "a top-level caller",
}  # fmt: skip


def _calls(path: Path) -> list[tuple[str, ast.Call, int]]:
    """``(enclosing function, call, line)`` of every call in ``path``."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else function
            if isinstance(child, ast.Call):
                found.append((function, child, child.lineno))
            visit(child, inner)

    visit(ast.parse(path.read_text()), "<module>")
    return found


def _imported(tree: ast.AST) -> set[str]:
    """The names that ``import`` statements bind anywhere in ``tree`` (modules and functions)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _ambient(call: ast.Call, imported: set[str]) -> str | None:
    """What the call loads on its own, or None. ``imported``: the names the file imports, so
    that ``module.predict(...)`` is the simulator and ``fit.predict(...)`` (a method of a value,
    such as a fitted USL) is not."""
    name = _name(call)
    keywords = {k.arg for k in call.keywords}
    if name == "data_dir":
        return "data_dir()"
    if name in LOADERS and not call.args and not keywords & {"path", "source"}:
        return f"{name}() without a path"
    func = call.func
    method = isinstance(func, ast.Attribute) and not (
        isinstance(func.value, ast.Name) and func.value.id in imported
    )
    if name in SIMULATIONS and not method and None not in keywords:
        missing = {"catalogue", "calibration"} - keywords
        if missing:
            return f"{name}() without {' and '.join(sorted(missing))}"
    return None


def _flagged(source: str) -> list[str]:
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return [what for call in calls if (what := _ambient(call, _imported(tree)))]


def test_the_check_tells_the_simulator_and_loaders_from_other_calls() -> None:
    assert _flagged("from trainscale.sim.model.shape import load_models\nload_models()") == [
        "load_models() without a path"
    ]
    assert _flagged("load_models(path)") == _flagged("load_hardware(source=p)") == []
    assert _flagged("import trainscale\ntrainscale.predict(df)") == [
        "predict() without calibration and catalogue"
    ]
    assert _flagged("predict(df, catalogue=c, calibration=k)") == []
    assert _flagged("def f(fit):\n    return fit.predict(x)") == []  # a fitted model's method


def test_the_library_loads_no_catalogue_or_calibration_on_its_own() -> None:
    found = []
    used = set()
    for path in sorted(LIBRARY):
        relative = path.relative_to(SRC).as_posix()
        imported = _imported(ast.parse(path.read_text()))
        for function, call, line in _calls(path):
            what = _ambient(call, imported)
            if what is None:
                continue
            if (relative, function) in ALLOWED:
                used.add((relative, function))
            else:
                found.append(f"{relative}:{line} in {function}: {what}")
    assert not found, "loads what its caller should pass:\n  " + "\n  ".join(found)
    assert used == set(ALLOWED), f"allowed but not needed any more: {set(ALLOWED) - used}"
