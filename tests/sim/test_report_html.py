"""report.html opens in headless Chromium with no error and draws every plot.

Debian's chromium and chromium-driver, driven by Selenium with the system chromedriver given
explicitly: Selenium Manager (which would download a driver) must not run, and the page loads
from a file:// URL with no network. The browser is a system package the test suite needs
(scripts/install-system-packages.sh installs it): without it this test fails, it does not skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.selenium_manager import SeleniumManager
from selenium.webdriver.support.ui import WebDriverWait
from tests.sim.scenario import run

from pinnace.sim.html import PLOT_IDS
from pinnace.sim.report import Report

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "scripts/install-system-packages.sh"
RENDER_TIMEOUT = 60.0


def no_selenium_manager(*_: object) -> dict[str, str]:
    raise AssertionError("Selenium Manager ran: it would look for a driver on the network")


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[webdriver.Chrome]:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    assert not missing, f"{', '.join(missing)} missing: run {INSTALL}"
    monkeypatch.setattr(SeleniumManager, "binary_paths", no_selenium_manager)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # as root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",  # nothing but the page: no updates, no sync
        "--disable-component-update",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """report.html of the small run, and the ids of its plots."""
    done = run()
    try:
        report = Report.from_run(
            done.observer,
            scenario="small",
            seed=1,
            simulated_seconds=120.0,
            wall_seconds=0.5,
            event_log_sha256="0" * 64,
        )
    finally:
        done.cluster.close()
    out = tmp_path_factory.mktemp("report")
    report.write(out)
    resources = len(report.summary["utilisation"]["cluster"])
    ids = [f"utilisation-{n}" for n in range(1, resources + 1)] + list(PLOT_IDS)
    return out / "report.html", ids


def svgs_per_plot(driver: webdriver.Chrome, ids: list[str]) -> dict[str, int]:
    script = "return arguments[0].map(id => document.querySelectorAll(`#${id} .main-svg`).length)"
    return dict(zip(ids, driver.execute_script(script, ids), strict=True))


def test_the_page_loads_without_errors_and_draws_every_plot(
    browser: webdriver.Chrome, page: tuple[Path, list[str]]
) -> None:
    path, ids = page
    assert "<script src=" not in path.read_text()  # plotly.js is inline: no network needed
    browser.get(path.as_uri())
    WebDriverWait(browser, RENDER_TIMEOUT).until(lambda d: all(svgs_per_plot(d, ids).values()))
    drawn = svgs_per_plot(browser, ids)
    # plotly draws each plot as a main SVG and a layer above it (hover, legend)
    assert all(count >= 2 for count in drawn.values()), drawn
    assert len(drawn) == 3 + len(PLOT_IDS)  # cpu, memory, pods
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    assert browser.find_element("css selector", "h1").text == "Pinnace simulation: small"
    cells = [td.text for td in browser.find_elements("css selector", "table td")]
    assert "DeletionByTaintManager" in " ".join(cells)
