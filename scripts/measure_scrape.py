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
With `--prometheus`, the scraping phase's scraper is Debian's prometheus (scrape_interval
INTERVAL) rather than Python threads, whose own CPU on a small machine would stand in for the
scrape's; its CPU is printed too, and before and after the phases it scrapes alone, without
pods being created, for `--rounds` intervals: the API server's CPU a scrape beyond its idle
rate. Through the node proxy it is configured as the standard Kubernetes configuration
scrapes cAdvisor (Prometheus' prometheus-kubernetes.yml job `kubernetes-cadvisor`): the nodes
as `kubernetes_sd_configs` role node finds them (given as file_sd targets: Debian builds
Prometheus without that discovery), `__address__` relabelled to the API server and
`__metrics_path__` to /api/v1/nodes/${1}/proxy/metrics/cadvisor, with the bearer token of a
ServiceAccount bound to a ClusterRole for nodes and nodes/proxy (made by the script), or of
the user `prometheus` of the server's token file (`--scraper-token`, bound to the same role).

Against `pinnace up --tls --token-auth-file F`, give the script a token of F with `--token`
(system:masters, say); the server's certificate is not verified, by the script nor by
Prometheus.

The probe GETs a pod (made at the start) every 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
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
ARGS.add_argument("server", type=lambda url: url.rstrip("/"), help="the API server's URL")
ARGS.add_argument("pods", type=int, nargs="?", default=1000, help="pods a phase (1000)")
ARGS.add_argument("interval", type=float, nargs="?", default=15.0, help="seconds a pass (15)")
ARGS.add_argument("scrapers", type=int, nargs="?", default=8, help="connections (8)")
ARGS.add_argument("pid", type=int, nargs="?", help="the API server's process")
ARGS.add_argument("--direct", action="store_true", help="each node at its kubelet address")
ARGS.add_argument("--agent-pid", type=int, help="the process that runs the nodes")
ARGS.add_argument("--rounds", type=int, default=1, help="idle and paced windows, before and after")
ARGS.add_argument("--prometheus", action="store_true",
                  help="scrape with Debian's prometheus instead of Python threads")  # fmt: skip
ARGS.add_argument("--token", help="bearer token of the script's own requests")
ARGS.add_argument("--scraper-token",
                  help="Prometheus' bearer token through the node proxy: the user prometheus' of "
                       "the token file (else a ServiceAccount's)")  # fmt: skip
OPTIONS = argparse.Namespace()
"""The arguments, which main() parses into it (so that importing the script parses none)."""
CREATORS = 4
PROBE_EVERY = 0.1
HEADERS = {"Content-Type": "application/json"}
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


def pool() -> urllib3.PoolManager:
    return urllib3.PoolManager(maxsize=32, cert_reqs="CERT_NONE")


HTTP = pool()
PROBED = "/api/v1/namespaces/default/pods/scrape-probe"
MONITORING = "monitoring"
SCRAPER_ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "prometheus"},
                "rules": [{"apiGroups": [""],
                           "resources": ["nodes", "nodes/proxy", "nodes/metrics"],
                           "verbs": ["get", "list", "watch"]}]}  # fmt: skip


def request(method: str, path: str, body: object = None) -> tuple[float, bytes]:
    """`path` of the API server, or a whole URL."""
    data = None if body is None else json.dumps(body).encode()
    url = path if "://" in path else OPTIONS.server + path
    start = time.perf_counter()
    response = HTTP.request(method, url, body=data, headers=HEADERS)
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


def listed_nodes() -> list[dict[str, Any]]:
    _, data = request("GET", "/api/v1/nodes")
    nodes: list[dict[str, Any]] = json.loads(data)["items"]
    return nodes


def full_scrape(nodes: list[str]) -> tuple[float, int]:
    def scrape(node: str) -> int:
        return len(request("GET", node)[1])

    start = time.perf_counter()
    with ThreadPoolExecutor(OPTIONS.scrapers) as pool:
        size = sum(pool.map(scrape, nodes))
    return time.perf_counter() - start, size


def paced_scrape(nodes: list[str], stop: Stop) -> tuple[float, int, int]:
    """One pass over every node, spread evenly over INTERVAL as Prometheus spreads its
    targets' scrapes (each at its own offset in the interval); a scrape that falls behind
    its offset goes at once."""
    start = time.perf_counter()
    step = OPTIONS.interval / len(nodes)

    def scrape(i: int) -> int | None:
        if stop.wait(max(0.0, start + i * step - time.perf_counter())):
            return None
        return len(request("GET", nodes[i])[1])

    with ThreadPoolExecutor(OPTIONS.scrapers) as pool:
        sizes = [size for size in pool.map(scrape, range(len(nodes))) if size is not None]
    return time.perf_counter() - start, len(sizes), sum(sizes)


def scraping(nodes: list[str], stop: Stop, passes: Queue[tuple[float, int, int]]) -> None:
    """Runs in its own process, as Prometheus would, so that its work does not hold the
    creators' GIL; with its own connections."""
    global HTTP
    HTTP = pool()
    while not stop.is_set():
        began = time.perf_counter()
        passes.put(paced_scrape(nodes, stop))
        stop.wait(max(0.0, OPTIONS.interval - (time.perf_counter() - began)))


class Prometheus:
    """Debian's prometheus scraping every node every INTERVAL seconds, as the real thing
    would: at each node's own address (--direct), or through the node proxy as the standard
    Kubernetes configuration has it; its CPU is measured as the scraper's."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise SystemExit("prometheus is missing: sh scripts/install-system-packages.sh")
        self.directory = tempfile.TemporaryDirectory()
        here = self.directory.name
        with open(f"{here}/nodes.json", "w") as file:
            json.dump([node_role(node) for node in nodes], file)
        interval = OPTIONS.interval
        timings = {"scrape_interval": f"{interval:g}s", "scrape_timeout": f"{min(interval, 10):g}s"}
        job: dict[str, Any] = {"job_name": "kubernetes-cadvisor",
                               "file_sd_configs": [{"files": [f"{here}/nodes.json"]}]}  # fmt: skip
        if OPTIONS.direct:
            job["metrics_path"] = "/metrics/cadvisor"
            job["relabel_configs"] = [
                {"source_labels": ["__meta_kubernetes_node_address_Hostname", "__address__"],
                 "regex": r"(.+);.*:(\d+)", "target_label": "__address__",
                 "replacement": "${1}:${2}"}]  # fmt: skip
        else:
            with open(f"{here}/token", "w") as file:
                file.write(scraper_token())
            scheme, address = OPTIONS.server.split("://", 1)
            job |= {"scheme": scheme,
                    "authorization": {"credentials_file": f"{here}/token"},
                    "tls_config": {"insecure_skip_verify": True},
                    "relabel_configs": [
                        {"action": "labelmap", "regex": "__meta_kubernetes_node_label_(.+)"},
                        {"target_label": "__address__", "replacement": address},
                        {"source_labels": ["__meta_kubernetes_node_name"], "regex": "(.+)",
                         "target_label": "__metrics_path__",
                         "replacement": "/api/v1/nodes/${1}/proxy/metrics/cadvisor"}]}  # fmt: skip
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

    def scrapes(self) -> float:
        """The scrapes it has made so far (of its targets but their first)."""
        try:
            text = HTTP.request("GET", f"{self.url}/metrics").data.decode()
        except urllib3.exceptions.HTTPError:
            return 0.0  # not listening yet
        counts = "prometheus_target_interval_length_seconds_count"
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(counts))  # fmt: skip

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.directory.cleanup()


def node_role(node: dict[str, Any]) -> dict[str, Any]:
    """The target `kubernetes_sd_configs` with `role: node` finds for the node (Prometheus'
    discovery/kubernetes/node.go): its InternalIP and kubelet port, with its name, labels and
    addresses as meta labels."""
    status = node["status"]
    addresses = {a["type"]: a["address"] for a in reversed(status["addresses"])}
    port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    labels = {"__meta_kubernetes_node_name": node["metadata"]["name"],
              "instance": node["metadata"]["name"]}  # fmt: skip
    for name, value in node["metadata"].get("labels", {}).items():
        labels["__meta_kubernetes_node_label_" + re.sub("[^a-zA-Z0-9_]", "_", name)] = value
    for kind, address in addresses.items():
        labels[f"__meta_kubernetes_node_address_{kind}"] = address
    return {"targets": [f"{addresses['InternalIP']}:{port}"], "labels": labels}


def scraper_token() -> str:
    """A token of the ServiceAccount monitoring/prometheus (or `--scraper-token`), bound to a
    ClusterRole for nodes and nodes/proxy, as a Prometheus in the cluster has (made once)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    subject = {"kind": "ServiceAccount", "name": "prometheus", "namespace": MONITORING}
    if OPTIONS.scraper_token:
        subject = {"kind": "User", "name": "prometheus", "apiGroup": "rbac.authorization.k8s.io"}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus"}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "prometheus"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "prometheus"},
               "subjects": [subject]}  # fmt: skip
    for path, body in ((f"{rbac}/clusterroles", SCRAPER_ROLE),
                       (f"{rbac}/clusterrolebindings", binding),
                       ("/api/v1/namespaces", {"metadata": {"name": MONITORING}}),
                       (f"/api/v1/namespaces/{MONITORING}/serviceaccounts", account)):  # fmt: skip
        try:
            request("POST", path, body)
        except RuntimeError as e:
            if " 409 " not in str(e):
                raise
    if OPTIONS.scraper_token:
        return str(OPTIONS.scraper_token)
    path = f"/api/v1/namespaces/{MONITORING}/serviceaccounts/prometheus/token"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 86400}}  # fmt: skip
    token: str = json.loads(request("POST", path, review)[1])["status"]["token"]
    return token


def cpu(pid: int | None) -> float:
    """CPU seconds the process has taken so far (0 without its PID)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def processes() -> dict[str, int | None]:
    """The processes whose CPU is measured: the API server's and the agent's, if given."""
    return {"server": OPTIONS.pid, "agent": OPTIONS.agent_pid}


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
    time.sleep(OPTIONS.interval)
    seconds = time.perf_counter() - start
    return {n: (cpu(p) - began[n]) / seconds for n, p in measured.items()}


def pass_cost(nodes: list[str]) -> None:
    """Each process's CPU over one paced pass, ROUNDS times, against its idle rate over the
    INTERVAL seconds before and after (the mean of the two, so that a drift in the idle rate
    does not count): what a pass took beyond it, per scrape and as a share of one core at one
    pass per INTERVAL (the median over the rounds); and the requests the API server's node
    proxy answered during each pass (its apiserver_request_total)."""
    measured = {name: pid for name, pid in processes().items() if pid is not None}
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
        share = middle * len(nodes) / OPTIONS.interval
        print(f"{name} CPU a scrape (median of {len(per_scrape)}): {middle * 1000:.3f} ms, "
              f"{share:.1%} of a core at a pass every {OPTIONS.interval:g} s")  # fmt: skip


def probing(stop: Stop, latencies: list[float]) -> None:
    while not stop.is_set():
        latencies.append(request("GET", PROBED)[0])
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
                                range(OPTIONS.pods)))  # fmt: skip
    while unbound(namespace):
        time.sleep(0.05)
    return creates


def prometheus_cost(listed: list[dict[str, Any]]) -> None:
    """Each process's CPU while Prometheus scrapes alone for ROUNDS intervals (after its first,
    as its targets' scrapes start spread over it), against its idle rate over the INTERVAL
    seconds before and after: what a scrape took beyond it, and the requests the API
    server's node proxy answered meanwhile."""
    measured = {name: pid for name, pid in processes().items() if pid is not None}
    before = idle_rates(measured)
    prometheus = Prometheus(listed)
    try:
        time.sleep(OPTIONS.interval)
        proxied, scrapes = proxied_so_far(), prometheus.scrapes()
        measured["prometheus"] = prometheus.process.pid
        began, start = {n: cpu(p) for n, p in measured.items()}, time.perf_counter()
        time.sleep(OPTIONS.rounds * OPTIONS.interval)
        ended, seconds = {n: cpu(p) for n, p in measured.items()}, time.perf_counter() - start
        proxied, scrapes = proxied_so_far() - proxied, prometheus.scrapes() - scrapes
        up = prometheus.targets_up()
    finally:
        prometheus.stop()
    after = idle_rates({n: p for n, p in measured.items() if n != "prometheus"})
    print(f"  prometheus alone for {seconds:.0f} s: {scrapes:.0f} scrapes, targets up {up}; "
          f"the node proxy answered {proxied:.0f} requests")  # fmt: skip
    for name in measured:
        idle = (before.get(name, 0.0) + after.get(name, 0.0)) / 2
        extra = ended[name] - began[name] - idle * seconds
        per_scrape = extra / max(scrapes, 1)
        share = per_scrape * len(listed) / OPTIONS.interval
        print(f"  {name} CPU: idle {idle:.1%} of a core; {extra:.2f} s more, "
              f"{per_scrape * 1000:.3f} ms a scrape, {share:.1%} of a core at "
              f"{len(listed)} nodes every {OPTIONS.interval:g} s")  # fmt: skip


def phase(name: str, nodes: list[str], listed: list[dict[str, Any]], scrape: bool) -> None:
    namespace = f"scrape-{name}"
    request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    stop = multiprocessing.Event()
    probe: list[float] = []
    passes: Queue[tuple[float, int, int]] = multiprocessing.Queue()
    workers: list[threading.Thread | multiprocessing.Process] = [
        threading.Thread(target=probing, args=(stop, probe))
    ]
    measured = processes()
    prometheus = None
    if scrape and OPTIONS.prometheus:
        prometheus = Prometheus(listed)
        measured["prometheus"] = prometheus.process.pid
        time.sleep(OPTIONS.interval)  # its first pass under way
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
        f"; {n} CPU {used / seconds:.0%} of a core, {used / OPTIONS.pods * 1000:.1f} ms a pod"
        for n, used in spent.items()
    )
    print(f"{name}: {OPTIONS.pods / seconds:.0f} pods/s; creates {percentiles(creates)}; "
          f"probe GET {percentiles(probe)}{shares}")  # fmt: skip
    while not passes.empty():
        took, scraped, size = passes.get()
        print(f"  scraping pass: {scraped} of {len(nodes)} nodes in {took:.2f} s, "
              f"{size / 1e6:.1f} MB")  # fmt: skip


def main() -> None:
    ARGS.parse_args(namespace=OPTIONS)
    if OPTIONS.token:
        HEADERS["Authorization"] = f"Bearer {OPTIONS.token}"
    try:
        request("POST", "/api/v1/namespaces/default/pods", pod("default", 0) | {
            "metadata": {"name": "scrape-probe", "namespace": "default"}})  # fmt: skip
    except RuntimeError as e:
        if " 409 " not in str(e):
            raise
    listed = listed_nodes()
    nodes = [cadvisor(node) for node in listed]
    took, size = full_scrape(nodes)
    print(f"idle full scrape of {len(nodes)} nodes: {took:.2f} s, {size / 1e6:.1f} MB")
    cost = prometheus_cost if OPTIONS.prometheus else lambda listed: pass_cost(nodes)
    cost(listed)
    phase("before", nodes, listed, scrape=False)
    phase("scraping", nodes, listed, scrape=True)
    phase("after", nodes, listed, scrape=False)
    took, size = full_scrape(nodes)
    print(f"full scrape of {len(nodes)} nodes with {3 * OPTIONS.pods} pods: {took:.2f} s, "
          f"{size / 1e6:.1f} MB")  # fmt: skip
    cost(listed)


if __name__ == "__main__":
    main()
