"""The browser the HTML reports' tests open pages in.

Debian's chromium and chromium-driver, driven by Selenium with the system chromedriver given
explicitly: Selenium Manager (which would download a driver) must not run, and the pages load
from file:// URLs with no network. The browser is a system package the test suite needs
(scripts/install-system-packages.sh installs it): without it these tests fail, they do not skip.
"""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "scripts/install-system-packages.sh"
RENDER_TIMEOUT = 60.0


def no_selenium_manager(*_: object) -> dict[str, str]:
    raise AssertionError("Selenium Manager ran: it would look for a driver on the network")


def svgs_per_plot(driver: webdriver.Chrome, ids: list[str]) -> dict[str, int]:
    script = "return arguments[0].map(id => document.querySelectorAll(`#${id} .main-svg`).length)"
    return dict(zip(ids, driver.execute_script(script, ids), strict=True))
