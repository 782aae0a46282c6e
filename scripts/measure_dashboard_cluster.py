"""Measures the dashboard in headless Chromium against a real `pinnace up`, with the pods
created through the API (docs/monitoring.md), and whether an open dashboard slows scheduling.

    pinnace up --in-memory --port 0 --nodes 1000 --kubeconfig K &   # URL: http://127.0.0.1:PORT
    PYTHONPATH=src python scripts/measure_dashboard_cluster.py URL [PODS] [BATCH] [control]

Start it on a cluster nobody has opened the dashboard of: the dashboard's informers start
with the first page that asks, and then stay. In order:

1. PODS pods (30,000) are created by 4 client threads as fast as they go, no page open; the
   last two BATCH (3,000) of them are timed apart: pods/s from the first create to the last
   pod bound, with no dashboard.
2. The snapshot is read twice (the first starts the dashboard's informers), then the page is
   opened: the time from navigation to every node's card and every bound pod's square shown,
   and the JS heap.
3. One pod at a time (5 times), the time from its create to its square shown.
4. Pods created at a steady STEADY_RATE a second for STEADY_SECONDS: the longest delay of a
   50 ms timer on the page (the longest main-thread stall) and the time in long tasks.
5. Two BATCH of pods as fast as the 4 threads go with the page open: pods/s.
6. The page closed, one more BATCH: the dashboard's informers still run, no page reads them.

With `control`, the same creates in the same order with no page ever opened, so that each
BATCH's pods/s compares with the same BATCH of a run with the page.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import urllib3
from dashboard_browser import PROBE, browser
from selenium import webdriver

SERVER = sys.argv[1].rstrip("/")
PODS = int(sys.argv[2]) if len(sys.argv) > 2 else 30_000
BATCH = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
CREATORS = 4
STEADY_RATE = 50
STEADY_SECONDS = 30
SINGLES = 5
CONTROL = sys.argv[4:5] == ["control"]
HTTP = urllib3.PoolManager(maxsize=16)

WATCH_FOR = """
const key = arguments[0];
window.shownAt = window.shownAt || {};
new MutationObserver((_, observer) => {
  if (!document.querySelector(`[data-pod="${key}"]`)) return;
  window.shownAt[key] = performance.now();
  observer.disconnect();
}).observe(document.getElementById("nodes"), {childList: true, subtree: true});
return performance.now();
"""
SHOWN = """
return [document.querySelectorAll("[data-node]").length,
        document.querySelectorAll("[data-pod]").length];
"""


def request(method: str, path: str, body: object = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    response = HTTP.request(method, SERVER + path, body=data,
                            headers={"Content-Type": "application/json"})  # fmt: skip
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {response.data[:200]!r}")
    return response.data


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def pod(i: int) -> dict[str, object]:
    container = {"name": "c", "image": "registry.k8s.io/pause",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}  # fmt: skip
    return {"metadata": {"name": f"p-{i}"}, "spec": {"containers": [container]}}


def namespace(name: str) -> str:
    request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


def unbound(ns: str) -> int:
    selector = "fieldSelector=spec.nodeName%3D"
    return len(json.loads(request("GET", f"/api/v1/namespaces/{ns}/pods?{selector}"))["items"])


def create(ns: str, count: int) -> float:
    """`count` pods by CREATORS threads as fast as they go: pods/s, first create to the last
    pod bound."""
    start = time.perf_counter()
    with ThreadPoolExecutor(CREATORS) as pool:
        list(pool.map(lambda i: request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i)),
                      range(count)))  # fmt: skip
    while unbound(ns):
        time.sleep(0.05)
    return count / (time.perf_counter() - start)


def bound_pods() -> int:
    items = json.loads(request("GET", "/api/v1/pods?fieldSelector=spec.nodeName%21%3D"))["items"]
    return len(items)


def fill() -> None:
    ns = namespace("fill")
    started, made = time.perf_counter(), 0
    while made < PODS - 2 * BATCH:
        step = min(5000, PODS - 2 * BATCH - made)
        with ThreadPoolExecutor(CREATORS) as pool:
            list(pool.map(lambda i: request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i)),
                          range(made, made + step)))  # fmt: skip
        made += step
        print(f"  {made} pods created, {time.perf_counter() - started:.0f} s, {load()}",
              flush=True)  # fmt: skip
    for run in (1, 2):
        rate = create(namespace(f"nodash-{run}"), BATCH)
        print(f"no dashboard, run {run}: {rate:.0f} pods/s ({BATCH} pods), {load()}", flush=True)


def first_render(driver: webdriver.Chrome, nodes: int) -> None:
    pods = bound_pods()
    start = time.monotonic()
    size = len(request("GET", "/dashboard/api/snapshot"))  # starts the dashboard's informers
    print(f"the first snapshot served in {time.monotonic() - start:.2f} s ({size / 1e6:.1f} MB)")
    start = time.monotonic()
    size = len(request("GET", "/dashboard/api/snapshot"))
    print(f"the next in {time.monotonic() - start:.2f} s; {load()}", flush=True)
    start = time.monotonic()
    driver.get(SERVER + "/dashboard/")
    while (shown := driver.execute_script(SHOWN)) != [nodes, pods]:
        time.sleep(0.05)
    took = time.monotonic() - start
    heap = driver.execute_cdp_cmd("Runtime.getHeapUsage", {})["usedSize"] / 2**20
    print(f"first render: {shown[0]} nodes, {shown[1]} pods in {took:.2f} s; "
          f"JS heap {heap:.0f} MiB; {load()}", flush=True)  # fmt: skip


def singles(driver: webdriver.Chrome) -> None:
    ns, took = namespace("single"), []
    for i in range(SINGLES):
        time.sleep(2)
        started = driver.execute_script(WATCH_FOR, f"{ns}/p-{i}")
        request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i))
        while (shown := driver.execute_script(f"return window.shownAt['{ns}/p-{i}']")) is None:
            time.sleep(0.02)
        took.append(shown - started)
    print(f"one new pod shown after (ms, create to square): {[round(t) for t in took]}; "
          f"median {statistics.median(took):.0f}; {load()}", flush=True)  # fmt: skip


def steady(driver: webdriver.Chrome) -> None:
    ns = namespace("steady")
    driver.execute_script(PROBE)
    start = time.perf_counter()
    count = STEADY_RATE * STEADY_SECONDS
    for i in range(count):
        time.sleep(max(0.0, start + i / STEADY_RATE - time.perf_counter()))
        request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i))
    kept_up = time.perf_counter() - start
    while unbound(ns):
        time.sleep(0.05)
    time.sleep(2)
    lag, long_tasks = driver.execute_script("return [window.lag, window.longTasks]")
    print(f"{STEADY_RATE} pods/s for {STEADY_SECONDS} s (the creates took {kept_up:.1f} s): "
          f"longest timer delay {lag:.0f} ms, long tasks {long_tasks / 1000:.1f} s; {load()}",
          flush=True)  # fmt: skip


def control() -> None:
    """The creates of the run with the page, with none."""
    ns = namespace("single")
    for i in range(SINGLES):
        time.sleep(2)
        request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i))
    ns, start = namespace("steady"), time.perf_counter()
    for i in range(STEADY_RATE * STEADY_SECONDS):
        time.sleep(max(0.0, start + i / STEADY_RATE - time.perf_counter()))
        request("POST", f"/api/v1/namespaces/{ns}/pods", pod(i))
    print(f"{STEADY_RATE} pods/s for {STEADY_SECONDS} s (the creates took "
          f"{time.perf_counter() - start:.1f} s)", flush=True)  # fmt: skip
    for name in ("dash-1", "dash-2", "closed"):
        rate = create(namespace(name), BATCH)
        print(f"no page, {name}: {rate:.0f} pods/s ({BATCH} pods); {load()}", flush=True)


def main() -> None:
    nodes = len(json.loads(request("GET", "/api/v1/nodes"))["items"])
    print(f"{nodes} nodes; {load()}", flush=True)
    fill()
    if CONTROL:
        control()
        return
    driver = browser(console_log=True)
    try:
        first_render(driver, nodes)
        singles(driver)
        steady(driver)
        for run in (1, 2):
            rate = create(namespace(f"dash-{run}"), BATCH)
            print(f"dashboard open, run {run}: {rate:.0f} pods/s ({BATCH} pods); {load()}",
                  flush=True)  # fmt: skip
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        if severe:
            print("console errors:", severe[:3])
    finally:
        driver.quit()
    rate = create(namespace("closed"), BATCH)
    print(f"page closed (the dashboard's informers still run): {rate:.0f} pods/s; {load()}")


if __name__ == "__main__":
    main()
