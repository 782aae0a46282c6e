"""Measures the dashboard's page in headless Chromium at a given size (docs/monitoring.md).

The page (pinnace/dashboard/static) is served with snapshots built by pinnace.dashboard.snapshot
from made-up nodes and pods (NODES nodes, PODS_PER_NODE pods each), not by a cluster: what is
measured is the browser's side (the server's was measured in one process, see the doc). The
server-sent events stream sends one pod ADDED per change, as the dashboard's server does.

    PYTHONPATH=src python scripts/measure_dashboard.py [NODES] [PODS_PER_NODE]

Prints the time to the first render (all node cards shown), the time to show one new pod, the
JS heap, and, while pods are added at 50/s for 20 s, the longest delay of a 50 ms timer and
the time spent in long tasks.
"""

from __future__ import annotations

import queue
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from dashboard_browser import PROBE, browser
from selenium.webdriver.common.by import By

from pinnace.dashboard import server, snapshot

NODES = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
PODS_PER_NODE = int(sys.argv[2]) if len(sys.argv) > 2 else 30
QOS = ("Guaranteed", "Burstable", "BestEffort")
CHURN_RATE = 50
CHURN_SECONDS = 20


def node(i: int) -> dict[str, Any]:
    status = {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
              "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
    return {"metadata": {"name": f"node-{i:04d}"}, "spec": {}, "status": status}


class Cluster:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.nodes = {n["metadata"]["name"]: n for n in map(node, range(NODES))}
        self.rows: dict[str, snapshot.PodRow] = {}
        self.subscribers: list[queue.Queue[bytes]] = []
        self.serial = 0
        for name in self.nodes:
            for _ in range(PODS_PER_NODE):
                self.add(name, announce=False)

    def add(self, node_name: str, announce: bool = True) -> str:
        with self.lock:
            self.serial += 1
            row = snapshot.PodRow("default", f"pod-{self.serial:06d}", node_name, "Running",
                                  QOS[self.serial % 3], 0.25, 2.0**28, ("", ""))  # fmt: skip
            self.rows[row.key] = row
        if announce:
            message = {"kind": "pods", "type": "ADDED", "namespace": row.namespace,
                       "name": row.name, "node": node_name}  # fmt: skip
            for q in list(self.subscribers):
                q.put(b"data: " + orjson.dumps(message) + b"\n\n")
        return row.key

    def used(self, names: set[str]) -> dict[str, tuple[float, float, float]]:
        """Every node's usage, new at each 10 s sample as the usage history's."""
        sample = random.Random(int(time.time() / 10))
        return {n: (sample.uniform(0, 32), sample.uniform(0, 2.0**37), PODS_PER_NODE)
                for n in sorted(names)}  # fmt: skip

    def snapshot(self, only: list[str] | None = None) -> dict[str, Any]:
        with self.lock:
            names = set(self.nodes) if only is None else set(only) & set(self.nodes)
            rows = [r for r in self.rows.values() if r.node in names]
            nodes, pending = snapshot.nodes_and_pending(
                [self.nodes[n] for n in names], rows, lambda _: None, self.used(names)
            )
        return {"nodes": nodes, "pending": pending, "workloads": {}, "events": []}


CLUSTER = Cluster()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: Any) -> None:
        pass

    def send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.removeprefix("/dashboard")
        if path in server.STATIC:
            name, content_type = server.STATIC[path]
            self.send(server._static(name), content_type)
        elif path == server.PLOTLY:
            plotly = server.resources.files("plotly") / "package_data" / "plotly.min.js"
            self.send(plotly.read_bytes(), "text/javascript")
        elif path == "/api/snapshot":
            self.send(orjson.dumps(CLUSTER.snapshot()), "application/json")
        elif path.startswith("/api/snapshot/"):
            names = [n for n in path.removeprefix("/api/snapshot/").split(",") if n]
            self.send(orjson.dumps(CLUSTER.snapshot(names)), "application/json")
        elif path == "/api/history":
            self.send(b'{"resolution": 10, "series": {}, "fragmentation": {}}', "application/json")
        elif path.startswith("/add/"):
            self.send(CLUSTER.add(path.removeprefix("/add/")).encode(), "text/plain")
        elif path == "/events":
            self.stream()
        else:
            self.send_error(404)

    def stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        q: queue.Queue[bytes] = queue.Queue()
        CLUSTER.subscribers.append(q)
        try:
            self.wfile.write(b"retry: 2000\n\n")
            self.wfile.flush()
            while True:
                self.wfile.write(q.get())
                self.wfile.flush()
        except OSError:
            CLUSTER.subscribers.remove(q)


SHOW_ONE = """
const [url, key, done] = arguments;
const start = performance.now();
new MutationObserver((_, observer) => {
  if (!document.querySelector(`[data-pod="${key}"]`)) return;
  observer.disconnect();
  done(performance.now() - start);
}).observe(document.getElementById("nodes"), {childList: true, subtree: true});
fetch(url);
"""


def main() -> None:
    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{http.server_address[1]}/dashboard/"
    driver = browser()
    try:
        start = time.monotonic()
        driver.get(base)
        while len(driver.find_elements(By.CSS_SELECTOR, "[data-node]")) < NODES:
            time.sleep(0.02)
        took = time.monotonic() - start
        print(f"{NODES} nodes, {len(CLUSTER.rows)} pods: first render {took:.2f} s")
        time.sleep(2)
        key = f"default/pod-{CLUSTER.serial + 1:06d}"
        shown = driver.execute_async_script(SHOW_ONE, base + "add/node-0500", key)
        print(f"one new pod shown after {shown:.0f} ms (of which up to 500 ms the page's debounce)")
        heap = driver.execute_cdp_cmd("Runtime.getHeapUsage", {})
        used, total = heap["usedSize"] / 2**20, heap["totalSize"] / 2**20
        print(f"JS heap {used:.0f} MiB used of {total:.0f} MiB")
        driver.execute_script(PROBE)
        end = time.monotonic() + CHURN_SECONDS
        names = list(CLUSTER.nodes)
        while time.monotonic() < end:
            CLUSTER.add(random.choice(names))
            time.sleep(1 / CHURN_RATE)
        time.sleep(1)
        lag, long_tasks = driver.execute_script("return [window.lag, window.longTasks]")
        print(f"{CHURN_RATE} pods/s for {CHURN_SECONDS} s: longest timer delay {lag:.0f} ms, "
              f"long tasks {long_tasks / 1000:.1f} s of {CHURN_SECONDS + 1} s")  # fmt: skip
        heap = driver.execute_cdp_cmd("Runtime.getHeapUsage", {})
        print(f"JS heap after {heap['usedSize'] / 2**20:.0f} MiB used")
    finally:
        driver.quit()
        http.shutdown()


if __name__ == "__main__":
    main()
