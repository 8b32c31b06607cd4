"""The README's two set-up commands, what .ci/run runs, the headline figure and every link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    section = _readme().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_the_two_setup_commands() -> None:
    install_and_run, install_and_test = _commands()
    assert install_and_run.endswith("pip install -e . && snakemake --cores all")
    assert install_and_test.endswith("&& pytest")
    assert install_and_run.startswith("python3 -m venv .venv")
    assert install_and_test.startswith("python3 -m venv .venv")


def test_ci_runs_exactly_the_readme_test_command_and_the_docs_build() -> None:
    _, install_and_test = _commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'readme_test_command="{install_and_test}"' in ci
    for check in (
        "ruff check .",
        "snakefmt --check .",
        "snakemake --lint",
        "mkdocs build --strict",
    ):
        assert check in ci
    assert ci.rindex("mkdocs build --strict") > ci.index('bash -c "$readme_test_command"')


def test_readme_is_short_and_has_the_pilot_validation_section() -> None:
    text = _readme()
    assert len(text.splitlines()) <= 250
    start, end = text.index("<!-- pilot-validation -->"), text.index("<!-- /pilot-validation -->")
    assert start < end
    assert start < len(text) // 5, "the pilot-validation figures belong on the first screen"


def test_readme_images_exist() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", _readme())
    assert images
    for image in images:
        assert (ROOT / image).is_file(), image


def _markdown_files() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "config" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(path: Path) -> None:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        assert (path.parent / file).exists(), f"{path.relative_to(ROOT)}: broken link {target}"


def test_readme_says_how_to_recover_from_a_killed_run() -> None:
    """User trial item 34: the lock a killed Snakemake leaves, and what to run."""
    text = " ".join(_readme().split())
    assert "Directory cannot be locked" in text
    assert "`snakemake --unlock` once, and rerun" in text
    assert ".dataset.<hex>.tmp" in text


def test_slurm_advice_never_sends_jobs_to_the_test_profile() -> None:
    """User trial item 24: no-accounting clusters get the two settings, not the test profile."""
    for path in (ROOT / "README.md", ROOT / "config" / "README.md"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert "slurm-status-command: squeue" in text and "slurm-no-account: true" in text
        assert "--profile tests/slurm/profile" not in text, path
        assert "compute nodes" in text, path


def test_docs_build_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict` of mkdocs.yml (also run by .ci/run after the tests)."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    pytest.importorskip(
        "mkdocstrings_handlers.python", reason="mkdocstrings-python is not installed"
    )
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", **__import__("os").environ},
    )
    assert done.returncode == 0, done.stderr[-4000:]


def test_config_readme_follows_the_schema_and_catalogue() -> None:
    """User trial item 27: the GPU list of the example error and the study keys come from data."""
    import yaml

    text = (ROOT / "config" / "README.md").read_text(encoding="utf-8")
    gpus = sorted(yaml.safe_load((ROOT / "data" / "hardware.yaml").read_text())["gpus"])
    assert "valid: " + ", ".join(gpus) in text
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "study.schema.yaml").read_text())
    fixed = schema["properties"]["fixed"]["properties"]
    missing = [key for key in fixed if f"`{key}`" not in text]
    assert not missing, f"config/README.md does not describe study keys {missing}"
    frameworks = yaml.safe_load(
        (ROOT / "workflow" / "schemas" / "frameworks.schema.yaml").read_text()
    )
    kernels = _find_enum(frameworks, "attention_kernel")
    row = next(line for line in text.splitlines() if line.startswith("| `attention_kernel`"))
    for kernel in kernels:
        assert f"`{kernel}`" in row, kernel


def _find_enum(node: object, key: str) -> list[str]:
    """The first `enum` under a mapping key named `key`, searched depth first."""
    if isinstance(node, dict):
        if key in node and isinstance(node[key], dict) and "enum" in node[key]:
            return node[key]["enum"]
        for value in node.values():
            found = _find_enum(value, key)
            if found:
                return found
    if isinstance(node, list):
        for value in node:
            found = _find_enum(value, key)
            if found:
                return found
    return []
