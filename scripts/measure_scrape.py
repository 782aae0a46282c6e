"""Measures what scraping every node's cAdvisor endpoint through the API server's node proxy
(`/api/v1/nodes/NAME/proxy/metrics/cadvisor`, as Prometheus' node role reaches it) costs a
running `pinnace up`, and whether it slows scheduling and the API (docs/monitoring.md).

    pinnace up --in-memory --nodes 5000 --kubeconfig K &
    python scripts/measure_scrape.py http://127.0.0.1:PORT [PODS] [INTERVAL] [SCRAPERS] [PID]

Three phases of PODS pods each (1000), each in its own namespace: without scraping, while
SCRAPERS (8) threads of another process scrape all nodes every INTERVAL seconds (15), and
without scraping again (the later phases run with more pods on the nodes, so the third shows
what that alone does).
While scraping, each pass spreads the nodes' scrapes evenly over the interval, as Prometheus
spreads its targets (a pass still under way when the phase ends is cut short). In each phase 4
threads create the pods and a probe GETs a namespace every 0.1 s; printed: pods/s (first create
to the last pod bound), the creates' and the probe's p50/p99 latency, and each scraping pass's
time and bytes. Before and after, one full scrape of every node as fast as SCRAPERS threads go.

Given the server's PID (on Linux), each phase also prints the CPU the server's process took
(share of one core), and at the start and the end it measures what a paced scraping pass
itself costs the server: its CPU over INTERVAL seconds with nothing else going on, then over one
pass, the difference as a share of one core.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as Stop

import urllib3

SERVER = sys.argv[1].rstrip("/")
PODS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
INTERVAL = float(sys.argv[3]) if len(sys.argv) > 3 else 15.0
SCRAPERS = int(sys.argv[4]) if len(sys.argv) > 4 else 8
SERVER_PID = int(sys.argv[5]) if len(sys.argv) > 5 else None
CREATORS = 4
PROBE_EVERY = 0.1
HTTP = urllib3.PoolManager(maxsize=32)


def request(method: str, path: str, body: object = None) -> tuple[float, bytes]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    start = time.perf_counter()
    response = HTTP.request(method, SERVER + path, body=data, headers=headers)
    took = time.perf_counter() - start
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {response.data[:200]!r}")
    return took, response.data


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"


def node_names() -> list[str]:
    _, data = request("GET", "/api/v1/nodes")
    return [item["metadata"]["name"] for item in json.loads(data)["items"]]


def full_scrape(nodes: list[str]) -> tuple[float, int]:
    def scrape(node: str) -> int:
        return len(request("GET", f"/api/v1/nodes/{node}/proxy/metrics/cadvisor")[1])

    start = time.perf_counter()
    with ThreadPoolExecutor(SCRAPERS) as pool:
        size = sum(pool.map(scrape, nodes))
    return time.perf_counter() - start, size


def paced_scrape(nodes: list[str], stop: Stop) -> tuple[float, int, int]:
    """One pass over every node, spread evenly over INTERVAL as Prometheus spreads its
    targets' scrapes (each at its own offset in the interval); a scrape that falls behind
    its offset goes at once."""
    start = time.perf_counter()
    step = INTERVAL / len(nodes)

    def scrape(i: int) -> int | None:
        if stop.wait(max(0.0, start + i * step - time.perf_counter())):
            return None
        return len(request("GET", f"/api/v1/nodes/{nodes[i]}/proxy/metrics/cadvisor")[1])

    with ThreadPoolExecutor(SCRAPERS) as pool:
        sizes = [size for size in pool.map(scrape, range(len(nodes))) if size is not None]
    return time.perf_counter() - start, len(sizes), sum(sizes)


def scraping(nodes: list[str], stop: Stop, passes: Queue[tuple[float, int, int]]) -> None:
    """Runs in its own process, as Prometheus would, so that its work does not hold the
    creators' GIL; with its own connections."""
    global HTTP
    HTTP = urllib3.PoolManager(maxsize=32)
    while not stop.is_set():
        began = time.perf_counter()
        passes.put(paced_scrape(nodes, stop))
        stop.wait(max(0.0, INTERVAL - (time.perf_counter() - began)))


def server_cpu() -> float:
    """CPU seconds the server's process has taken so far (0 without its PID)."""
    if SERVER_PID is None:
        return 0.0
    with open(f"/proc/{SERVER_PID}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pass_cost(nodes: list[str]) -> None:
    """The server's CPU over INTERVAL idle seconds, then over one paced pass: what the pass
    took beyond the idle rate, per scrape and as a share of one core at one pass per INTERVAL."""
    if SERVER_PID is None:
        return
    began, start = server_cpu(), time.perf_counter()
    time.sleep(INTERVAL)
    idle = (server_cpu() - began) / (time.perf_counter() - start)
    began = server_cpu()
    took, scraped, _ = paced_scrape(nodes, multiprocessing.Event())
    extra = server_cpu() - began - idle * took
    print(f"server CPU: idle {idle:.1%} of a core; a paced pass of {scraped} scrapes in "
          f"{took:.1f} s took {extra:.2f} s more, {extra / scraped * 1000:.3f} ms a scrape: "
          f"{extra / INTERVAL:.1%} of a core at a pass every {INTERVAL:g} s")  # fmt: skip


def probing(stop: Stop, latencies: list[float]) -> None:
    while not stop.is_set():
        latencies.append(request("GET", "/api/v1/namespaces/default")[0])
        stop.wait(PROBE_EVERY)


def pod(namespace: str, i: int) -> dict[str, object]:
    container = {"name": "c", "image": "pause",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": namespace},
            "spec": {"containers": [container]}}  # fmt: skip


def unbound(namespace: str) -> int:
    selector = "fieldSelector=spec.nodeName%3D"
    _, data = request("GET", f"/api/v1/namespaces/{namespace}/pods?{selector}")
    return len(json.loads(data)["items"])


def phase(name: str, nodes: list[str], scrape: bool) -> None:
    namespace = f"scrape-{name}"
    request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    stop = multiprocessing.Event()
    probe: list[float] = []
    passes: Queue[tuple[float, int, int]] = multiprocessing.Queue()
    workers: list[threading.Thread | multiprocessing.Process] = [
        threading.Thread(target=probing, args=(stop, probe))
    ]
    if scrape:
        workers.append(multiprocessing.Process(target=scraping, args=(nodes, stop, passes)))
    for worker in workers:
        worker.start()
    start, cpu = time.perf_counter(), server_cpu()
    with ThreadPoolExecutor(CREATORS) as pool:
        path = f"/api/v1/namespaces/{namespace}/pods"
        creates = list(pool.map(lambda i: request("POST", path, pod(namespace, i))[0],
                                range(PODS)))  # fmt: skip
    while unbound(namespace):
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    cpu = server_cpu() - cpu
    stop.set()
    for worker in workers:
        worker.join()
    print(f"{name}: {PODS / seconds:.0f} pods/s; creates {percentiles(creates)}; "
          f"probe GET {percentiles(probe)}" + (f"; server CPU {cpu / seconds:.0%} of a core"
                                                if SERVER_PID is not None else ""))  # fmt: skip
    while not passes.empty():
        took, scraped, size = passes.get()
        print(f"  scraping pass: {scraped} of {len(nodes)} nodes in {took:.2f} s, "
              f"{size / 1e6:.1f} MB")  # fmt: skip


def main() -> None:
    nodes = node_names()
    took, size = full_scrape(nodes)
    print(f"idle full scrape of {len(nodes)} nodes: {took:.2f} s, {size / 1e6:.1f} MB")
    pass_cost(nodes)
    phase("before", nodes, scrape=False)
    phase("scraping", nodes, scrape=True)
    phase("after", nodes, scrape=False)
    took, size = full_scrape(nodes)
    print(f"full scrape of {len(nodes)} nodes with {3 * PODS} pods: {took:.2f} s, "
          f"{size / 1e6:.1f} MB")  # fmt: skip
    pass_cost(nodes)


if __name__ == "__main__":
    main()
