"""The HTML report in a real browser: every figure is listed, opens and is displayed.

Builds every figure and table of the repository's config/config.yaml in a copy of the
workflow, then ``snakemake --report reports/report.html`` for them (fixture ``report_run``),
opens the report in Debian's headless Chromium through selenium and ``/usr/bin/chromedriver``,
and for every figure of the config clicks its entry and checks that the PNG is loaded
(``naturalWidth > 0``) and displayed. Skipped, with the reason, where Chromium, chromedriver or
selenium is missing (``apt-get install chromium chromium-driver``; ``pip install selenium``).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest

from trainscale.figures import FIGURES
from trainscale.tables import TABLES

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
_IMAGE_LOADED = (
    "const img = arguments[0];"
    "return img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width > 0;"
)


def _browser(profile: Path):
    """A headless Chromium driven by /usr/bin/chromedriver, or skip with the reason."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not installed (apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _open(driver, category: str) -> None:
    """Open a result category (Figures, Tables) from the report's start page."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.XPATH, f"//span[text()='{category}']").click()


def _entries(driver) -> dict[str, object]:
    """The entries of the open category: name → its row in the menu."""
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.XPATH, "//tr[td]")
    return {row.find_element(By.XPATH, "./td[1]").text.strip(): row for row in rows}


def test_report_shows_every_figure_in_chromium(report_run):
    # report_run (tests/conftest.py): the config's figures and tables, then the report for them,
    # built in a copy of the workflow; it skips where Chromium, chromedriver or selenium is missing
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    workdir, config = report_run.workdir, report_run.config
    assert sorted(config["figures"]) == sorted(FIGURES), "config.yaml must list every figure"
    assert sorted(config["tables"]) == sorted(TABLES), "config.yaml must list every table"
    assert report_run.run.returncode == 0, report_run.run.stderr[-3000:]
    assert report_run.report.returncode == 0, report_run.report.stderr[-3000:]
    report = workdir / "reports" / "report.html"
    rendered = (workdir / "reports" / "figures" / "fsdp_scaleout.png").read_bytes()
    readme = Path(__file__).resolve().parents[2] / "reports" / "readme" / "fsdp_scaleout.png"
    # digests, not the bytes: pytest's diff of two 300 kB byte strings takes many minutes
    digest = hashlib.sha256
    assert digest(readme.read_bytes()).hexdigest() == digest(rendered).hexdigest(), (
        "the README's headline figure is stale: copy reports/figures/fsdp_scaleout.png to "
        "reports/readme/fsdp_scaleout.png"
    )

    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    driver = _browser(profile)
    try:
        driver.get(report.as_uri())
        WebDriverWait(driver, 30).until(
            lambda d: d.find_elements(By.XPATH, "//span[text()='Figures']")
        )
        _open(driver, "Figures")
        figures = _entries(driver)
        assert sorted(figures) == sorted(config["figures"])
        not_shown = []
        for name in sorted(figures):
            row = _entries(driver)[name]
            row.find_element(By.CSS_SELECTOR, "a[iconname='eye']").click()
            xpath = f"//img[contains(@src, 'filename={name}.png')]"
            try:
                image = WebDriverWait(driver, 20).until(
                    lambda d, xpath=xpath: d.find_element(By.XPATH, xpath)
                )
                WebDriverWait(driver, 20).until(
                    lambda d, image=image: d.execute_script(_IMAGE_LOADED, image)
                )
                assert image.is_displayed()
            except Exception as error:  # collect every figure that fails, then report all
                not_shown.append(f"{name}: {type(error).__name__}")
        assert not not_shown, f"figures not displayed: {not_shown}"
        driver.get(report.as_uri())
        WebDriverWait(driver, 30).until(
            lambda d: d.find_elements(By.XPATH, "//span[text()='Tables']")
        )
        _open(driver, "Tables")
        assert sorted(_entries(driver)) == sorted(config["tables"])
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
