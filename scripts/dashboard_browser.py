"""What the dashboard measuring scripts share: the headless Chromium they drive (Debian's
chromium and chromedriver) and the page probe that records the event loop's lag and long tasks.

    from dashboard_browser import PROBE, browser   # scripts/ is on the path of a script run there
"""

from __future__ import annotations

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

PROBE = """
window.lag = 0; window.longTasks = 0;
let last = performance.now();
window.probe = setInterval(() => {
  const now = performance.now();
  window.lag = Math.max(window.lag, now - last - 50);
  last = now;
}, 50);
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.longTasks += e.duration;
}).observe({entryTypes: ["longtask"]});
"""


def browser(*, console_log: bool = False) -> webdriver.Chrome:
    """Headless Chromium; with `console_log`, the page's console kept for reading back."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(120)
    return driver
