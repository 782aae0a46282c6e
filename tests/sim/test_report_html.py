"""report.html opens in headless Chromium with no error and draws every plot (the browser:
tests/sim/browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait
from tests.sim.browser import RENDER_TIMEOUT, svgs_per_plot
from tests.sim.scenario import run

from pinnace.sim.html import PLOT_IDS
from pinnace.sim.report import Report


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
    title = browser.find_element("css selector", "#history-churn .gtitle").text
    assert title == "scheduling, evictions and OOM kills"  # as the dashboard has it
    cells = [td.text for td in browser.find_elements("css selector", "table td")]
    assert "DeletionByTaintManager" in " ".join(cells)
