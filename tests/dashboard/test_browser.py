"""The dashboard in Chromium against `pinnace up --nodes 2`: the nodes it shows are
kubectl's, a Deployment created with kubectl appears without a reload, and the charts over
time, a pod's usage and a workload's replicas come from the usage history; a new pod redraws
only its node's card, and a change to a pending pod, workload or Event only its row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from tests.http.conftest import Cluster, launch, stop
from tests.sim.browser import RENDER_TIMEOUT


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("dashboard"), flags=("--nodes", "2"))
    yield running
    stop(running)


def shown(driver: webdriver.Chrome, selector: str, attribute: str) -> list[str]:
    return sorted(
        e.get_attribute(attribute) or "" for e in driver.find_elements(By.CSS_SELECTOR, selector)
    )


def test_the_dashboard_shows_the_nodes_and_new_pods_appear_live(
    cluster: Cluster, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    wait = WebDriverWait(browser, RENDER_TIMEOUT)
    browser.get(cluster.url + "/dashboard/")
    wait.until(lambda d: d.find_element(By.ID, "status").text == "live")
    nodes = cluster.ok("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert len(nodes) == 2
    wait.until(lambda d: shown(d, "[data-node]", "data-node") == sorted(nodes))
    assert browser.find_elements(By.CSS_SELECTOR, "#utilisation .main-svg")
    for chart in ("history-utilisation", "history-pods", "history-churn", "history-fragmentation"):
        wait.until(lambda d, c=chart: d.find_elements(By.CSS_SELECTOR, f"#{c} .main-svg"))
    title = browser.find_element(By.CSS_SELECTOR, "#history-churn .gtitle").text
    assert title == "scheduling, evictions and OOM kills"  # as the simulation's report has it
    browser.execute_script("window.notReloaded = true")

    cluster.ok("create", "deployment", "web", "--image=nginx", "--replicas=3")
    cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    pods = cluster.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}")
    expected = sorted(f"default/{name}" for name in pods.split())
    wait.until(lambda d: shown(d, "[data-pod]", "data-pod") == expected)
    wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#workloads table[data-kind=deployments]")
    )
    assert "default/web" in browser.find_element(By.ID, "workloads").text
    assert browser.execute_script("return window.notReloaded") is True

    kept, other = nodes
    browser.execute_script(f"window.kept = document.querySelector('[data-node=\"{kept}\"]')")
    overrides = f'{{"spec": {{"nodeName": "{other}"}}}}'
    cluster.ok("run", "pinned", "--image=nginx", f"--overrides={overrides}")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-pod="default/pinned"]'))
    unchanged = f"return window.kept === document.querySelector('[data-node=\"{kept}\"]')"
    assert browser.execute_script(unchanged) is True, "a pod on another node re-rendered the card"

    browser.find_element(By.CSS_SELECTOR, f'[data-pod="{expected[0]}"]').click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#explain-nodes tr"))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#pod-usage .main-svg"))
    assert expected[0] in browser.find_element(By.ID, "pod-title").text

    browser.get(cluster.url + "/dashboard/#/workloads/deployments/default/web")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#workload-replicas .main-svg"))
    assert "default/web" in browser.find_element(By.ID, "workload-title").text

    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def row_keys(driver: webdriver.Chrome, table: str) -> list[str]:
    rows = f"document.querySelectorAll('{table} tr[data-key]')"
    script = f"return [...{rows}].map(r => r.dataset.key)"
    result: list[str] = driver.execute_script(script)
    return result


def mark_rows(driver: webdriver.Chrome, table: str) -> None:
    driver.execute_script(
        f"document.querySelectorAll('{table} tr[data-key]').forEach(r => r.marked = true)"
    )


def marked(driver: webdriver.Chrome, table: str) -> list[str]:
    """The keys of the rows whose elements are still those `mark_rows` marked."""
    script = (
        f"return [...document.querySelectorAll('{table} tr[data-key]')]"
        ".filter(r => r.marked).map(r => r.dataset.key)"
    )
    result: list[str] = driver.execute_script(script)
    return result


def row_text(driver: webdriver.Chrome, table: str, key: str) -> str:
    """The row's text, found and read in one script: a row the page replaces between a lookup
    and a read (what these tests make it do) would be a stale element to the second."""
    script = "const row = document.querySelector(arguments[0]); return row ? row.innerText : ''"
    text: str = driver.execute_script(script, f'{table} tr[data-key="{key}"]')
    return text


def test_a_change_replaces_only_its_rows_in_the_tables(
    cluster: Cluster, browser: webdriver.Chrome
) -> None:
    wait = WebDriverWait(browser, RENDER_TIMEOUT)
    browser.get(cluster.url + "/dashboard/")
    wait.until(lambda d: d.find_element(By.ID, "status").text == "live")
    gated = '{"spec": {"schedulingGates": [{"name": "example.com/hold"}], ' \
        '"nodeSelector": {"example.com/none": "x"}}}'  # fmt: skip
    for name in ("gated-a", "gated-b", "gated-c"):
        cluster.ok("run", name, "--image=nginx", f"--overrides={gated}")
    pending = [f"default/gated-{x}" for x in "abc"]
    wait.until(lambda d: row_keys(d, "#pending") == pending)
    assert "SchedulingGated" in row_text(browser, "#pending", "default/gated-b")
    for name in ("wa", "wb"):
        cluster.ok("create", "deployment", name, "--image=nginx", "--replicas=0")
    wait.until(lambda d: {"default/wa", "default/wb"} <= set(row_keys(d, "#workloads table")))
    wait.until(lambda d: row_keys(d, "#events"))
    events = row_keys(browser, "#events")
    for table in ("#pending", "#workloads table", "#events"):
        mark_rows(browser, table)

    # Ungated, gated-b fails its node selector: its row says so, the others stay as they were.
    cluster.ok("patch", "pod", "gated-b", "--type=json",
               "-p", '[{"op": "remove", "path": "/spec/schedulingGates"}]')  # fmt: skip
    wait.until(lambda d: "FailedScheduling" in row_text(d, "#pending", "default/gated-b"))
    assert marked(browser, "#pending") == ["default/gated-a", "default/gated-c"]
    assert set(events) <= set(marked(browser, "#events")), "a new Event replaced the others"
    assert len(row_keys(browser, "#events")) > len(events)

    cluster.ok("run", "gated-0", "--image=nginx", f"--overrides={gated}")
    cluster.ok("delete", "pod", "gated-a", "--wait=false")
    wait.until(lambda d: row_keys(d, "#pending") == ["default/gated-0", *pending[1:]])
    assert marked(browser, "#pending") == ["default/gated-c"]

    cluster.ok("scale", "deployment", "wb", "--replicas=1")
    wait.until(lambda d: row_text(d, "#workloads table", "default/wb").split()[1:2] == ["1"])
    assert "default/wa" in marked(browser, "#workloads table")
    assert "default/wb" not in marked(browser, "#workloads table")

    cluster.ok("delete", "deployment", "wa", "wb")
    cluster.ok("delete", "pod", "gated-0", "gated-b", "gated-c")
    wait.until(lambda d: not row_keys(d, "#pending"))
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


# Holds back the scheduler's explanation of pod `slow` until `window.release()`, and notes
# every URL the page fetches.
SLOW_EXPLAIN = """
window.fetched = [];
const realFetch = window.fetch;
let release;
const held = new Promise((resolve) => { release = resolve; });
window.release = () => release();
window.fetch = async (url, ...rest) => {
  window.fetched.push(String(url));
  if (String(url).endsWith("/pods/slow")) await held;
  return realFetch(url, ...rest);
};
"""


def test_a_pod_page_left_before_it_loaded_does_not_draw_over_the_next(
    cluster: Cluster, browser: webdriver.Chrome
) -> None:
    wait = WebDriverWait(browser, RENDER_TIMEOUT)
    for name in ("slow", "fast"):
        cluster.ok("run", name, "--image=nginx")
    cluster.ok("wait", "--for=condition=Ready", "pod/slow", "pod/fast", "--timeout=60s")
    browser.get(cluster.url + "/dashboard/")
    wait.until(lambda d: d.find_element(By.ID, "status").text == "live")
    browser.execute_script(SLOW_EXPLAIN)
    browser.execute_script("location.hash = '#/pods/default/slow'")
    wait.until(lambda d: any(u.endswith("/pods/slow") for u in d.execute_script(
        "return window.fetched")))  # fmt: skip
    browser.execute_script("location.hash = '#/pods/default/fast'")
    wait.until(lambda d: "default/fast" in d.find_element(By.ID, "pod-title").text)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#explain-nodes tr"))
    browser.execute_script("window.fetched = []; window.release()")
    # What the slow page would do once its explanation came: fetch its pod's usage. The fast
    # page fetches its own every few seconds; wait for one of those.
    wait.until(lambda d: "api/pods/default/fast" in d.execute_script("return window.fetched"))
    fetched = browser.execute_script("return window.fetched")
    assert "api/pods/default/slow" not in fetched, fetched
    assert "default/fast" in browser.find_element(By.ID, "pod-title").text
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe


def test_a_pod_page_says_when_its_pod_is_deleted(
    cluster: Cluster, browser: webdriver.Chrome
) -> None:
    wait = WebDriverWait(browser, RENDER_TIMEOUT)
    cluster.ok("run", "doomed", "--image=nginx")
    cluster.ok("wait", "--for=condition=Ready", "pod/doomed", "--timeout=60s")
    browser.get(cluster.url + "/dashboard/#/pods/default/doomed")
    wait.until(lambda d: "Running" in d.find_element(By.ID, "pod-title").text)
    cluster.ok("delete", "pod", "doomed", "--wait=true")
    wait.until(lambda d: "not found" in d.find_element(By.ID, "pod-title").text)
    assert "default/doomed" in browser.find_element(By.ID, "pod-title").text
