"""Measures what scraping every node's cAdvisor endpoint costs a running cluster, and whether
it slows scheduling and the API (docs/monitoring.md): through the API server's node proxy
(`/api/v1/nodes/NAME/proxy/metrics/cadvisor`), or with `--direct` at each node's own kubelet
address as its Node publishes it (Hostname address, `daemonEndpoints.kubeletEndpoint.Port`:
the nodes of `pinnace agent --node-addresses`), as Prometheus' node role reaches kubelets.

    pinnace up --in-memory --nodes 5000 --kubeconfig K &
    python scripts/measure_scrape.py http://127.0.0.1:PORT [PODS] [INTERVAL] [SCRAPERS] [PID]

    pinnace up --in-memory --kubeconfig K &
    pinnace agent --kubeconfig K --nodes 5000 --name-prefix far --node-addresses 127.1.0.0/16 &
    python scripts/measure_scrape.py http://127.0.0.1:PORT 3000 15 8 PID --direct --agent-pid APID

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
(share of one core, and CPU time per pod created, which a machine shared with other work moves
less than pods/s), and at the start and the end it measures what a paced scraping pass itself
costs the server: its CPU over one pass against its rate over INTERVAL seconds with nothing
going on before and after, `--rounds` times, and the requests its node proxy answered meanwhile.
With `--agent-pid`, the same CPU figures for the process that runs the nodes (a `pinnace agent`).
With `--prometheus`, the scraping phase's scraper is Debian's prometheus (a file_sd target a
node, scrape_interval INTERVAL) rather than Python threads, whose own CPU on a small machine
would stand in for the scrape's; its CPU is printed too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as Stop
from typing import Any

import urllib3

ARGS = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ARGS.add_argument("server", help="the API server's URL")
ARGS.add_argument("pods", type=int, nargs="?", default=1000, help="pods a phase (1000)")
ARGS.add_argument("interval", type=float, nargs="?", default=15.0, help="seconds a pass (15)")
ARGS.add_argument("scrapers", type=int, nargs="?", default=8, help="connections (8)")
ARGS.add_argument("pid", type=int, nargs="?", help="the API server's process")
ARGS.add_argument("--direct", action="store_true", help="each node at its kubelet address")
ARGS.add_argument("--agent-pid", type=int, help="the process that runs the nodes")
ARGS.add_argument("--rounds", type=int, default=1, help="idle and paced windows, before and after")
ARGS.add_argument("--prometheus", action="store_true",
                  help="scrape with Debian's prometheus instead of Python threads")  # fmt: skip
OPTIONS = ARGS.parse_args()
SERVER = OPTIONS.server.rstrip("/")
PODS = OPTIONS.pods
INTERVAL = OPTIONS.interval
SCRAPERS = OPTIONS.scrapers
SERVER_PID = OPTIONS.pid
AGENT_PID = OPTIONS.agent_pid
CREATORS = 4
PROBE_EVERY = 0.1
HTTP = urllib3.PoolManager(maxsize=32)


def request(method: str, path: str, body: object = None) -> tuple[float, bytes]:
    """`path` of the API server, or a whole URL."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    url = path if "://" in path else SERVER + path
    start = time.perf_counter()
    response = HTTP.request(method, url, body=data, headers=headers)
    took = time.perf_counter() - start
    if response.status >= 300:
        raise RuntimeError(f"{method} {url}: {response.status} {response.data[:200]!r}")
    return took, response.data


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"


def cadvisor(node: dict[str, Any]) -> str:
    """Where the node's cAdvisor is scraped: through the node proxy, or (--direct) at the
    kubelet address its Node publishes."""
    if not OPTIONS.direct:
        return f"/api/v1/nodes/{node['metadata']['name']}/proxy/metrics/cadvisor"
    status = node["status"]
    host = next(a["address"] for a in status["addresses"] if a["type"] == "Hostname")
    return f"http://{host}:{status['daemonEndpoints']['kubeletEndpoint']['Port']}/metrics/cadvisor"


def node_urls() -> list[str]:
    _, data = request("GET", "/api/v1/nodes")
    return [cadvisor(item) for item in json.loads(data)["items"]]


def full_scrape(nodes: list[str]) -> tuple[float, int]:
    def scrape(node: str) -> int:
        return len(request("GET", node)[1])

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
        return len(request("GET", nodes[i])[1])

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


class Prometheus:
    """Debian's prometheus scraping every node every INTERVAL seconds (each target at the
    path and address of its URL), as the real thing would; its CPU is measured as the
    scraper's."""

    def __init__(self, nodes: list[str]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise SystemExit("prometheus is missing: sh scripts/install-system-packages.sh")
        self.directory = tempfile.TemporaryDirectory()
        here = self.directory.name
        targets = []
        for url in nodes:
            url = url if "://" in url else SERVER + url
            scheme, rest = url.split("://", 1)
            address, path = rest.split("/", 1)
            labels = {"__scheme__": scheme, "__metrics_path__": "/" + path}
            targets.append({"targets": [address], "labels": labels})
        with open(f"{here}/nodes.json", "w") as file:
            json.dump(targets, file)
        timings = {"scrape_interval": f"{INTERVAL:g}s", "scrape_timeout": f"{min(INTERVAL, 10):g}s"}
        job = {"job_name": "cadvisor", "file_sd_configs": [{"files": [f"{here}/nodes.json"]}]}
        with open(f"{here}/prometheus.yml", "w") as file:
            json.dump({"global": timings, "scrape_configs": [job]}, file)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{probe.getsockname()[1]}"
        self.process = subprocess.Popen(
            [binary, f"--config.file={here}/prometheus.yml", f"--storage.tsdb.path={here}/data",
             f"--web.listen-address={self.url.split('://')[1]}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def targets_up(self) -> str:
        """How many targets answered their last scrape, of how many."""
        counts = []
        for query in ("count(up == 1)", "count(up)"):
            response = HTTP.request("GET", f"{self.url}/api/v1/query", fields={"query": query})
            result = json.loads(response.data)["data"]["result"]
            counts.append(result[0]["value"][1] if result else "0")
        return " of ".join(counts)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.directory.cleanup()


def cpu(pid: int | None) -> float:
    """CPU seconds the process has taken so far (0 without its PID)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PROCESSES = {"server": SERVER_PID, "agent": AGENT_PID}


PROXIED = 'resource="nodes",scope="resource",subresource="proxy",verb="CONNECT"'
"""The labels of apiserver_request_total's series of node-proxy requests."""


def proxied_so_far() -> float:
    """The node-proxy requests the API server has answered so far."""
    _, text = request("GET", "/metrics")
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.decode().splitlines()
        if line.startswith("apiserver_request_total{") and PROXIED in line
    )


def idle_rates(measured: dict[str, int]) -> dict[str, float]:
    """Each process's CPU a second over INTERVAL seconds with nothing scraping."""
    began, start = {n: cpu(p) for n, p in measured.items()}, time.perf_counter()
    time.sleep(INTERVAL)
    seconds = time.perf_counter() - start
    return {n: (cpu(p) - began[n]) / seconds for n, p in measured.items()}


def pass_cost(nodes: list[str]) -> None:
    """Each process's CPU over one paced pass, ROUNDS times, against its idle rate over the
    INTERVAL seconds before and after (the mean of the two, so that a drift in the idle rate
    does not count): what a pass took beyond it, per scrape and as a share of one core at one
    pass per INTERVAL (the median over the rounds); and the requests the API server's node
    proxy answered during each pass (its apiserver_request_total)."""
    measured = {name: pid for name, pid in PROCESSES.items() if pid is not None}
    if not measured:
        return
    extras: dict[str, list[float]] = {name: [] for name in measured}
    after = idle_rates(measured)
    for _ in range(OPTIONS.rounds):
        before = after
        proxied = proxied_so_far()
        began = {n: cpu(p) for n, p in measured.items()}
        took, scraped, _ = paced_scrape(nodes, multiprocessing.Event())
        ended = {n: cpu(p) for n, p in measured.items()}
        proxied = proxied_so_far() - proxied
        after = idle_rates(measured)
        for name in measured:
            idle = (before[name] + after[name]) / 2
            extra = ended[name] - began[name] - idle * took
            extras[name].append(extra / scraped)
            print(f"  {name} CPU: idle {idle:.1%} of a core; a paced pass of {scraped} "
                  f"scrapes in {took:.1f} s took {extra:.2f} s more, "
                  f"{extra / scraped * 1000:.3f} ms a scrape")  # fmt: skip
        print(f"  the API server's node proxy answered {proxied:.0f} requests during the pass")
    for name, per_scrape in extras.items():
        middle = statistics.median(per_scrape)
        share = middle * len(nodes) / INTERVAL
        print(f"{name} CPU a scrape (median of {len(per_scrape)}): {middle * 1000:.3f} ms, "
              f"{share:.1%} of a core at a pass every {INTERVAL:g} s")  # fmt: skip


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


def create_pods(namespace: str) -> list[float]:
    """The phase's pods, by CREATORS client threads, when all of them are bound: the
    creates' latencies."""
    with ThreadPoolExecutor(CREATORS) as pool:
        path = f"/api/v1/namespaces/{namespace}/pods"
        creates = list(pool.map(lambda i: request("POST", path, pod(namespace, i))[0],
                                range(PODS)))  # fmt: skip
    while unbound(namespace):
        time.sleep(0.05)
    return creates


def phase(name: str, nodes: list[str], scrape: bool) -> None:
    namespace = f"scrape-{name}"
    request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    stop = multiprocessing.Event()
    probe: list[float] = []
    passes: Queue[tuple[float, int, int]] = multiprocessing.Queue()
    workers: list[threading.Thread | multiprocessing.Process] = [
        threading.Thread(target=probing, args=(stop, probe))
    ]
    measured = dict(PROCESSES)
    prometheus = None
    if scrape and OPTIONS.prometheus:
        prometheus = Prometheus(nodes)
        measured["prometheus"] = prometheus.process.pid
        time.sleep(INTERVAL)  # its first pass under way
    elif scrape:
        workers.append(multiprocessing.Process(target=scraping, args=(nodes, stop, passes)))
    for worker in workers:
        worker.start()
    start, began = time.perf_counter(), {n: cpu(p) for n, p in measured.items()}
    creates = create_pods(namespace)
    seconds = time.perf_counter() - start
    spent = {n: cpu(p) - began[n] for n, p in measured.items() if p is not None}
    stop.set()
    for worker in workers:
        worker.join()
    if prometheus is not None:
        print(f"  prometheus: targets up at its last scrape {prometheus.targets_up()}")
        prometheus.stop()
    shares = "".join(
        f"; {n} CPU {used / seconds:.0%} of a core, {used / PODS * 1000:.1f} ms a pod"
        for n, used in spent.items()
    )
    print(f"{name}: {PODS / seconds:.0f} pods/s; creates {percentiles(creates)}; "
          f"probe GET {percentiles(probe)}{shares}")  # fmt: skip
    while not passes.empty():
        took, scraped, size = passes.get()
        print(f"  scraping pass: {scraped} of {len(nodes)} nodes in {took:.2f} s, "
              f"{size / 1e6:.1f} MB")  # fmt: skip


def main() -> None:
    nodes = node_urls()
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
