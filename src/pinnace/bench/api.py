"""`pinnace bench api`: the Kubernetes API over real HTTP, as `pinnace up` serves it.

The server runs as `pinnace up` in a process of its own (SQLite in a temporary directory,
memory, or etcd: Debian's etcd-server started in the temporary directory, with its default
durability), on 127.0.0.1 and a free port, and the load comes from this process over loopback, as
kubectl's or a controller's would. The server's event loop can use one core at most (its
SQLite writer thread shares the GIL), so it gets one of the machine's cores to itself; clients
in the same process would take their CPU out of the server's budget and measure less than a
real server delivers. The clients are cheap (a raw HTTP/1.1 client, bodies encoded
beforehand): about a fifth of the server's CPU.

On a machine of two cores or more the creates run with the server on one core and the
clients on the others (`_pinned`): left to the scheduler, the clients' process, woken by each
answer, is mostly woken on the server's core and takes it from the server (Linux wakes a task
where its waker runs), so every answer cost the server a switch and the clients' work, which a
real API server's clients on other machines never cost it (on a quiet 2-core machine: 3,300-3,400
creates/s unpinned, 4,000-4,250 pinned, the same server). The watches are not pinned: there the
clients' 100 watchers are the heavier side, and held to one core of a busy machine they fell
behind (a delivery p99 over a second in half the runs).

- Creates: `clients` keep-alive connections POST pods (two containers with requests and
  limits) as fast as the server answers; a create's latency runs from sending it to its 201.
  The server's CPU time per create (its process, every thread, user and system) is what the
  machine's other work does not change, where creates/s does.
- List: the median time of a few full LISTs of the namespace's pods, from sending the
  request to the last byte of the answer; then of a few LISTs with a label selector that picks
  one of the ten ReplicaSets the pods belong to (a tenth of them), as the ReplicaSet
  controller or `kubectl get pods -l` asks.
- Watch: `watchers` watches of the namespace from the list's resourceVersion, asking for
  bookmarks as informers do, while `watch_writes` more pods are created at `watch_rate` per
  second; an event's latency runs from sending the create to the arrival of its line at a
  watcher. The server's CPU time over the phase (the paced creates and every watcher's
  delivery of them) per event delivered, as for the creates, is what other work on the machine
  does not change.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import orjson
import yaml

from pinnace.bench import Figure, Figures, per_second, percentile, render_table
from pinnace.client.transport import Connection, HTTPError

BACKENDS = ("sqlite", "memory", "etcd")
NAMESPACE = "bench"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
LIST_REPEATS = 3
"""Lists timed; the median is reported."""
READY_TIMEOUT = 60.0
"""Seconds the server may take to start."""
PHASE_TIMEOUT = 600.0
"""No phase may take longer: the benchmark always stops by itself."""
STOP_TIMEOUT = 15.0
"""Seconds the server gets to stop after SIGTERM before it is killed."""
WATCH_SETTLE_SECONDS = 0.2
"""Pause after the watches are open, before the paced creates begin."""
WATCHED_NAME = re.compile(rb'"name":"(watch-\d+)"')
"""The name of a pod created during the watch phase, in a watch event's line."""
TEMPLATE_HASHES = tuple(f"5d8f7c9b6{c}" for c in "bcdfghjklm")
"""The pods' pod-template-hash, one per ReplicaSet; pod i belongs to ReplicaSet i % 10."""
SELECTED = f"pod-template-hash={TEMPLATE_HASHES[0]}"
"""The label selector of the selective list: the first ReplicaSet's pods."""


class BenchError(Exception):
    """The benchmark could not run to the end; the message says why."""


def figures(pods: int, watchers: int) -> tuple[Figure, ...]:
    return (
        Figure("creates_per_second", "pod creates/s"),
        Figure("create_p50_ms", "create latency p50 (ms)"),
        Figure("create_p99_ms", "create latency p99 (ms)"),
        Figure("create_server_cpu_ms", "server CPU per create (ms)"),
        Figure("list_10k_seconds", f"list of {pods} pods (s)"),
        Figure("list_bytes", "list response size (bytes)"),
        Figure("list_10k_selector_seconds", f"list by label selector, 1 in 10 of {pods} pods (s)"),
        Figure("watch_p50_ms", f"watch delivery p50 to {watchers} watchers (ms)"),
        Figure("watch_p99_ms", f"watch delivery p99 to {watchers} watchers (ms)"),
        Figure("watch_events_per_second", "watch events/s delivered"),
        Figure("watch_server_cpu_us", "server CPU per watch event delivered (µs)"),
    )


def run(
    backend: str, pods: int, clients: int, watchers: int, watch_writes: int, watch_rate: float
) -> Figures:
    """Start a server on `backend`, measure it, stop it."""
    if backend not in BACKENDS:
        raise BenchError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    with tempfile.TemporaryDirectory(prefix="pinnace-bench-api-") as directory:
        return asyncio.run(
            _run(Path(directory), backend, pods, clients, watchers, watch_writes, watch_rate)
        )


def render(
    results: Figures,
    backend: str,
    pods: int,
    clients: int,
    watchers: int,
    watch_writes: int,
    watch_rate: float,
    as_json: bool,
) -> str:
    if as_json:
        document = {
            "benchmark": "api",
            "backend": backend,
            "pods": pods,
            "clients": clients,
            "watchers": watchers,
            "watch_writes": watch_writes,
            "watch_rate": watch_rate,
            **results,
        }
        return json.dumps(document, indent=2)
    title = (
        f"Pinnace API benchmark over HTTP: {pods} pods from {clients} clients, "
        f"{watchers} watchers of {watch_writes} creates at {watch_rate:g}/s"
    )
    return render_table(title, figures(pods, watchers), {backend: results})


async def _run(
    directory: Path,
    backend: str,
    pods: int,
    clients: int,
    watchers: int,
    watch_writes: int,
    watch_rate: float,
) -> Figures:
    async with _server(directory, backend) as (url, pid):
        try:
            return await _measure(url, pid, pods, clients, watchers, watch_writes, watch_rate)
        except HTTPError as e:
            raise BenchError(str(e)) from None


@contextlib.contextmanager
def _pinned(pid: int) -> Iterator[None]:
    """Process `pid` on the first of this process's cores and this process on the others,
    while measuring, then both back on them all; nothing where there are fewer than two (or
    no affinity to set)."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        yield
        return
    _set_affinity(pid, cores[:1])
    os.sched_setaffinity(0, cores[1:])
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)
        _set_affinity(pid, cores)


def _set_affinity(pid: int, cores: list[int]) -> None:
    """Every thread of process `pid` on `cores` (a thread started later takes its starter's)."""
    for thread in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):  # a thread that has ended
            os.sched_setaffinity(int(thread.name), cores)


async def _measure(
    url: str,
    pid: int,
    pods: int,
    clients: int,
    watchers: int,
    watch_writes: int,
    watch_rate: float,
) -> Figures:
    """Each phase on connections of its own: the server closes connections left idle."""
    async with _connections(url, 1) as (connection,):
        await _expect(connection, "POST", "/api/v1/namespaces", _namespace(NAMESPACE), 201)

    bodies = [_pod_manifest(f"pod-{i:06}", TEMPLATE_HASHES[i % 10]) for i in range(pods)]
    latencies: list[float] = []

    async def create(connection: Connection, i: int) -> None:
        start = time.perf_counter()
        await _expect(connection, "POST", PODS_PATH, bodies[i], 201)
        latencies.append(time.perf_counter() - start)

    async with _phase("the creates"), _connections(url, clients) as connections:
        with _pinned(pid):
            cpu_before = _cpu_seconds(pid)
            create_seconds = await _as_fast_as_possible(connections, pods, create)
            create_cpu = _cpu_seconds(pid) - cpu_before

    async with _phase("the lists"), _connections(url, 1) as (connection,):
        list_seconds, listed = await _list(connection, PODS_PATH, pods)
        selector_seconds, _ = await _list(
            connection, f"{PODS_PATH}?labelSelector={SELECTED}", len(range(0, pods, 10))
        )

    async with _phase("the watches"):
        cpu_before = _cpu_seconds(pid)
        watch_latencies, watch_seconds = await _watch(
            url, listed, watchers, clients, watch_writes, watch_rate
        )
        watch_cpu = _cpu_seconds(pid) - cpu_before

    return {
        "creates_per_second": per_second(pods, create_seconds),
        "create_p50_ms": percentile(latencies, 50) * 1000,
        "create_p99_ms": percentile(latencies, 99) * 1000,
        "create_server_cpu_ms": create_cpu / pods * 1000,
        "list_10k_seconds": statistics.median(list_seconds),
        "list_bytes": len(listed),
        "list_10k_selector_seconds": statistics.median(selector_seconds),
        "watch_p50_ms": percentile(watch_latencies, 50) * 1000,
        "watch_p99_ms": percentile(watch_latencies, 99) * 1000,
        "watch_events_per_second": per_second(len(watch_latencies), watch_seconds),
        "watch_server_cpu_us": watch_cpu / len(watch_latencies) * 1e6,
    }


@contextlib.asynccontextmanager
async def _connections(url: str, count: int) -> AsyncIterator[list[Connection]]:
    connections: list[Connection] = []
    try:
        for _ in range(count):
            connections.append(await Connection.open(url))
        yield connections
    finally:
        for connection in connections:
            connection.close()


async def _as_fast_as_possible(
    connections: list[Connection], count: int, call: Callable[[Connection, int], Awaitable[None]]
) -> float:
    """Run `call(connection, 0..count-1)`, each connection taking the next index when its
    last answer is in; the seconds it took overall."""
    todo: Iterator[int] = iter(range(count))

    async def client(connection: Connection) -> None:
        for i in todo:
            await call(connection, i)

    start = time.perf_counter()
    await asyncio.gather(*(client(c) for c in connections))
    return time.perf_counter() - start


async def _list(connection: Connection, path: str, pods: int) -> tuple[list[float], bytes]:
    """Seconds per list of `path`, and the last list's body (checked to hold `pods` pods)."""
    seconds = []
    body = b""
    for _ in range(LIST_REPEATS):
        start = time.perf_counter()
        body = await _expect(connection, "GET", path, b"", 200)
        seconds.append(time.perf_counter() - start)
    items = len(orjson.loads(body)["items"])
    if items != pods:
        raise BenchError(f"the list of {path} held {items} pods, not {pods}")
    return seconds, body


async def _watch(
    url: str, listed: bytes, watchers: int, clients: int, writes: int, rate: float
) -> tuple[list[float], float]:
    """Every (watcher, event) delivery latency, and the seconds from the first create until
    the last watcher saw the last one."""
    revision = orjson.loads(listed)["metadata"]["resourceVersion"]
    names = [f"watch-{i:06}" for i in range(writes)]
    bodies = [_pod_manifest(name, TEMPLATE_HASHES[0]) for name in names]
    sent: dict[str, float] = {}
    latencies: list[float] = []

    async def consume(watch: Connection) -> None:
        seen = 0
        async for line in watch.lines():
            arrived = time.perf_counter()
            # Not parsed: decoding every line of 100 watches costs this process more CPU than
            # the server spends sending them, and would measure the client's backlog.
            named = WATCHED_NAME.search(line)
            if line.startswith(b'{"type":"BOOKMARK",'):
                continue
            if named is None or not line.startswith(b'{"type":"ADDED",'):
                raise BenchError(f"a watcher got an unexpected event: {line[:200]!r}")
            latencies.append(arrived - sent[named[1].decode()])
            seen += 1
            if seen == writes:
                return
        raise BenchError(f"a watch ended after {seen} of {writes} events")

    async def client(connection: Connection, first: int, start: float) -> None:
        for i in range(first, writes, clients):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent[names[i]] = time.perf_counter()
            await _expect(connection, "POST", PODS_PATH, bodies[i], 201)

    async with _connections(url, watchers) as streams:
        for watch in streams:
            # Its head comes once the server has registered the watch.
            # Asking for bookmarks, as client-go's reflectors (every informer) do.
            query = f"watch=true&resourceVersion={revision}&allowWatchBookmarks=true"
            await watch.stream(f"{PODS_PATH}?{query}")
        consumers = [asyncio.ensure_future(consume(watch)) for watch in streams]
        try:
            async with _connections(url, clients) as connections:
                await asyncio.sleep(WATCH_SETTLE_SECONDS)
                start = time.perf_counter()
                await asyncio.gather(*(client(c, i, start) for i, c in enumerate(connections)))
            await asyncio.gather(*consumers)
            return latencies, time.perf_counter() - start
        finally:
            for consumer in consumers:
                consumer.cancel()
            await asyncio.gather(*consumers, return_exceptions=True)


async def _expect(
    connection: Connection, method: str, path: str, body: bytes, expected: int
) -> bytes:
    try:
        status, answer = await connection.request(method, path, body)
    except HTTPError as e:
        raise BenchError(f"{method} {path}: {e}") from None
    if status != expected:
        raise BenchError(f"{method} {path} answered {status}: {answer[:300].decode('utf-8')}")
    return answer


@contextlib.asynccontextmanager
async def _phase(name: str) -> AsyncIterator[None]:
    try:
        async with asyncio.timeout(PHASE_TIMEOUT):
            yield
    except TimeoutError:
        raise BenchError(f"{name} took longer than {PHASE_TIMEOUT:g} s") from None


def _cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used so far, user and system, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


@contextlib.asynccontextmanager
async def _server(directory: Path, backend: str) -> AsyncIterator[tuple[str, int]]:
    """`pinnace up` in its own process; its URL and process id while it runs."""
    async with contextlib.AsyncExitStack() as stack:
        storage = (
            ["--in-memory"] if backend == "memory" else ["--data-dir", str(directory / "data")]
        )
        if backend == "etcd":
            storage += ["--etcd-servers", await stack.enter_async_context(_etcd(directory))]
        async with _pinnace_up(directory, storage) as served:
            yield served


@contextlib.asynccontextmanager
async def _pinnace_up(directory: Path, storage: list[str]) -> AsyncIterator[tuple[str, int]]:
    kubeconfig = directory / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pinnace.cli.main",
        "up",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--kubeconfig",
        str(kubeconfig),
        "--no-scheduler",  # the API server alone: no binds, status updates or events
        *storage,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        await _until_ready(process)
        config = yaml.safe_load(kubeconfig.read_text())
        yield config["clusters"][0]["cluster"]["server"], process.pid
    finally:
        await _stop(process)


@contextlib.asynccontextmanager
async def _etcd(directory: Path) -> AsyncIterator[str]:
    """Debian's etcd, a single member with its data in `directory`; its client URL."""
    binary = shutil.which("etcd")
    if binary is None:
        raise BenchError("--backend etcd needs etcd (Debian's etcd-server package)")
    client, peer = _free_port(), _free_port()
    url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    log = open(directory / "etcd.log", "wb")  # noqa: SIM115
    process = await asyncio.create_subprocess_exec(
        binary,
        *("--data-dir", str(directory / "etcd"), "--listen-client-urls", url),
        *("--advertise-client-urls", url, "--listen-peer-urls", peer_url),
        *("--initial-advertise-peer-urls", peer_url, "--initial-cluster", f"default={peer_url}"),
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
    )
    log.close()
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            while not await asyncio.to_thread(_healthy, url):
                if process.returncode is not None:
                    raise BenchError(f"etcd exited with code {process.returncode}")
                await asyncio.sleep(0.05)
        yield url
    except TimeoutError:
        raise BenchError(f"etcd was not ready within {READY_TIMEOUT:g} s") from None
    finally:
        await _stop(process)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return bool(json.loads(response.read()).get("health") == "true")
    except (OSError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _until_ready(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            while (line := await process.stdout.readline()) != b"Ready.\n":
                if not line:
                    code = await process.wait()
                    raise BenchError(f"the server exited with code {code} before it was ready")
    except TimeoutError:
        raise BenchError(f"the server was not ready within {READY_TIMEOUT:g} s") from None


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()


def _namespace(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _pod_manifest(name: str, template_hash: str) -> bytes:
    """A pod as a Deployment's template would make it: an app and a sidecar, each with
    requests and limits, probes, ports and environment."""
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {"app": "bench", "tier": "web", "pod-template-hash": template_hash},
                "annotations": {"bench.pinnace.dev/purpose": "api benchmark"},
            },
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.k8s.io/nginx-slim:0.27",
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "env": [{"name": "MODE", "value": "bench"}],
                        "resources": {
                            "requests": {"cpu": "250m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"},
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/healthz", "port": "http"},
                            "periodSeconds": 5,
                        },
                    },
                    {
                        "name": "log-shipper",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "32Mi"},
                            "limits": {"cpu": "100m", "memory": "64Mi"},
                        },
                    },
                ],
                "terminationGracePeriodSeconds": 10,
            },
        }
    )
