"""One import path per name: a name is imported from the module that defines it, or from a
package's ``__init__``, never through another module that imported it."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("src", "tests", "workflow/scripts", "benchmarks")

#: Imports through a module that does not define the name that are tolerated: (importing file,
#: module imported from, name). None: every name is imported from its defining module.
KNOWN: set[tuple[str, str, str]] = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``) for every module of src/."""
    modules = {}
    for path in (REPO / "src").rglob("*.py"):
        parts = list(path.relative_to(REPO / "src").with_suffix("").parts)
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)
    return modules


def _imported_only(path: Path) -> set[str]:
    """The names a module binds at its top level by ``from … import``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_every_name_is_imported_from_its_defining_module() -> None:
    modules = _modules()
    borrowed = {name: _imported_only(path) for name, (path, package) in modules.items()}
    found = set()
    for source in SOURCES:
        for path in (REPO / source).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or node.module not in modules:
                    continue
                if modules[node.module][1]:
                    continue  # a package's __init__ is a façade by design
                for alias in node.names:
                    if alias.name in borrowed[node.module]:
                        found.add((path.relative_to(REPO).as_posix(), node.module, alias.name))
    assert found - KNOWN == set(), "import these names from the module that defines them"
    assert KNOWN - found == set(), "no longer imported so: remove them from KNOWN"
