"""Fixtures of the simulation's tests: the browser HTML reports open in (tests/sim/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.selenium_manager import SeleniumManager
from tests.sim.browser import CHROMEDRIVER, CHROMIUM, INSTALL, no_selenium_manager


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
