"""The dashboard in Chromium against `pinnace up --nodes 2`: the nodes it shows are
kubectl's, a Deployment created with kubectl appears without a reload, and the charts over
time, a pod's usage and a workload's replicas come from the usage history; a new pod redraws
only its node's card."""

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
