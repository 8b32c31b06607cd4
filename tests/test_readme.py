"""The README's two set-up commands, what .ci/run runs, and the headline figure."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_the_two_setup_commands() -> None:
    install_and_run, install_and_test = _commands()
    assert install_and_run.endswith("pip install -e . && snakemake --cores all")
    assert install_and_test.endswith("&& pytest")
    assert install_and_run.startswith("python3 -m venv .venv")
    assert install_and_test.startswith("python3 -m venv .venv")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, install_and_test = _commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'readme_test_command="{install_and_test}"' in ci
    for linter in ("ruff check .", "snakefmt --check .", "snakemake --lint"):
        assert linter in ci


def test_readme_images_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images
    for image in images:
        assert (ROOT / image).is_file(), image


def test_readme_says_how_to_recover_from_a_killed_run() -> None:
    """User trial item 34: the lock a killed Snakemake leaves, and what to run."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "Directory cannot be locked" in text
    assert "`snakemake --unlock` once, and rerun" in text
    assert ".dataset.<hex>.tmp" in text
