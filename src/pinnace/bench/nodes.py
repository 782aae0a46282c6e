"""`pinnace bench nodes`: how many simulated nodes and pods one process keeps alive in real
time, and what they cost.

The process is the `ControlPlane` `pinnace up --in-memory --nodes N --no-scheduler` runs, less
the HTTP front end and the controllers but the namespace controller: the API server on the
memory store with its compactor (every 5 minutes, as kube-apiserver's) and Event expiry, and a
`NodeAgentPool` of N nodes of the default shape. The
pods (`pods_per_node` per node, one container each, running until deleted) are created already
bound (spec.nodeName) through the in-process client, as a scheduler's bindings would leave them,
and the node agents admit them, start their containers and report them Running. Then, for
`seconds` of real time, the nodes live: the heartbeat wheel renews every lease each 10 s and
syncs the node status, as the kubelet does.

Figures: the resident memory (RSS) at the end and at its peak, and what each node and each pod
added to it (measured between the phases); the CPU the process used during the steady period,
as a percentage of one core; the lease renewals done against those due, and the oldest lease at
the end (under 40 s: no node was at risk of being marked Unknown).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import resource
import time
from typing import Any

from pinnace.bench import Figure, Figures, render_table
from pinnace.client import LocalClient
from pinnace.clock import Clock, parse_time
from pinnace.cluster import ClusterOptions, ControlPlane, settle_garbage_collection
from pinnace.kubelet import NodeAgent, NodeAgentPool, node_configs
from pinnace.kubelet.agent import PODS
from pinnace.store import MemoryStore
from pinnace.store.compactor import DEFAULT_INTERVAL as DEFAULT_COMPACTION_INTERVAL

NAMESPACE = "default"
CREATE_BATCH = 500
"""Pods created concurrently: enough to keep the server busy, few enough to stay fair to the
heartbeat wheel meanwhile."""
STARTING_AT_MOST = 5000
"""Pods created and not yet running, at most, before the next batch: pods arrive as fast as the
node agents start them, not in a backlog of thousands of queued pods and status writes that
would set the process's memory high-water mark."""
STARTING_POLL_SECONDS = 0.25
SETTLE_POLL_SECONDS = 0.5
SETTLE_TIMEOUT = 1800.0
"""No phase may take longer: the benchmark always stops by itself."""


class BenchError(Exception):
    """The benchmark could not run to the end; the message says why."""


def figures() -> tuple[Figure, ...]:
    return (
        Figure("nodes", "nodes"),
        Figure("pods", "pods"),
        Figure("rss_mib", "resident memory (MiB)"),
        Figure("rss_peak_mib", "peak resident memory (MiB)"),
        Figure("mib_per_node", "memory per node without pods (MiB)"),
        Figure("kib_per_pod", "memory per running pod (KiB)"),
        Figure("cpu_percent", "CPU while steady (% of one core)"),
        Figure("lease_renewals", "lease renewals while steady"),
        Figure("lease_renewals_due", "lease renewals due while steady"),
        Figure("oldest_lease_seconds", "oldest lease at the end (s)"),
        Figure("register_seconds", "time to register the nodes (s)"),
        Figure("pods_running_seconds", "time until every pod ran (s)"),
        Figure("compact_seconds", "compacting (and settling) the start's history (s)"),
    )


def run(
    nodes: int,
    pods_per_node: int,
    seconds: float,
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL,
) -> Figures:
    return asyncio.run(_measure(nodes, pods_per_node, seconds, compaction_interval))


def render(results: Figures, as_json: bool) -> str:
    if as_json:
        return json.dumps(results)
    return render_table(
        "Pinnace node benchmark (API server and node agents in one process, real time)",
        figures(),
        {"": results},
    )


async def _measure(
    nodes: int, pods_per_node: int, seconds: float, compaction_interval: float
) -> Figures:
    clock = Clock(asyncio.get_running_loop())
    store = MemoryStore(pack_ahead=True)
    options = ClusterOptions(
        nodes=node_configs(nodes),
        scheduler=False,
        controllers=False,
        compaction_interval=compaction_interval,
    )
    plane = ControlPlane(store, clock, options)
    client, pool = plane.client(), plane.nodes
    settle_garbage_collection()
    baseline = _rss_mib()

    started = time.perf_counter()
    await plane.start()
    registered = time.perf_counter()
    with_nodes = _rss_mib()
    try:
        starting = _Starting(pool)
        await _create_pods(client, starting, pods_per_node)
        await _until_running(starting, nodes * pods_per_node)
        await asyncio.sleep(SETTLE_POLL_SECONDS)  # the last status writes
        running = time.perf_counter()
        # What pinnace up's compactor does within two intervals: the history of the set-up
        # writes goes, as it would in a process that has been running a while.
        await store.compact(store.revision)
        compacted = time.perf_counter()
        gc.collect()
        with_pods = _rss_mib()

        renewals = pool.renewals
        cpu = _cpu_seconds()
        steady_from = time.perf_counter()
        await asyncio.sleep(seconds)
        steady = time.perf_counter() - steady_from
        cpu_used = _cpu_seconds() - cpu
        renewed = pool.renewals - renewals
        oldest = max(
            (
                clock.now() - parse_time(a.node_lease.lease["spec"]["renewTime"])
                for a in _leased(pool)
            ),
            default=0.0,
        )
        rss = _rss_mib()
    finally:
        await plane.stop()
    pods = nodes * pods_per_node
    return {
        "nodes": nodes,
        "pods": pods,
        "seconds": round(steady, 1),
        "rss_mib": round(rss, 1),
        "rss_peak_mib": round(_rss_mib("VmHWM"), 1),
        "mib_per_node": round((with_nodes - baseline) / nodes, 3) if nodes else None,
        "kib_per_pod": round((with_pods - with_nodes) * 1024 / pods, 2) if pods else None,
        "cpu_percent": round(100 * cpu_used / steady, 1) if steady > 0 else None,
        "lease_renewals": renewed,
        "lease_renewals_due": round(nodes * steady / pool.interval),
        "oldest_lease_seconds": round(oldest, 1),
        "register_seconds": round(registered - started, 1),
        "pods_running_seconds": round(running - registered, 1),
        "compact_seconds": round(compacted - running, 1),
    }


def _pod(node: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{node}-{index}", "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


class _Starting:
    """The pods created and not yet seen running, by node and uid: a poll looks at those only,
    not at every worker of every node (at 5,000 x 110, half a million a poll)."""

    def __init__(self, pool: NodeAgentPool) -> None:
        self.agents = pool.agents
        self.created = 0
        self._waiting: list[tuple[str, str]] = []

    def add(self, pods: list[Any]) -> None:
        self._waiting += ((pod["spec"]["nodeName"], pod["metadata"]["uid"]) for pod in pods)
        self.created += len(pods)

    def running(self) -> int:
        """How many of the pods created the node agents have admitted and run so far."""
        agents = self.agents
        self._waiting = [(node, uid) for node, uid in self._waiting if not _runs(agents[node], uid)]
        return self.created - len(self._waiting)


def _runs(agent: NodeAgent, uid: str) -> bool:
    worker = agent.workers.get(uid)
    return worker is not None and worker.phase == "Running"


async def _create_pods(client: LocalClient, starting: _Starting, per_node: int) -> None:
    wanted = ((name, i) for i in range(per_node) for name in starting.agents)
    running = 0
    while batch := [_pod(name, i) for name, i in itertools.islice(wanted, CREATE_BATCH)]:
        if starting.created - running > STARTING_AT_MOST:
            running = await _until_running(
                starting, starting.created - STARTING_AT_MOST, poll=STARTING_POLL_SECONDS
            )
        starting.add(await asyncio.gather(*(client.create(PODS, NAMESPACE, pod) for pod in batch)))


async def _until_running(starting: _Starting, pods: int, poll: float = SETTLE_POLL_SECONDS) -> int:
    """Until the node agents have admitted and run at least `pods` pods; how many they run."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while (running := starting.running()) < pods:
        if time.monotonic() > deadline:
            raise BenchError(f"only {running} of {pods} pods ran in {SETTLE_TIMEOUT:g} s")
        await asyncio.sleep(poll)
    return running


def _leased(pool: NodeAgentPool) -> list[Any]:
    return [a for a in pool.agents.values() if a.node_lease.lease is not None]


def _rss_mib(field: str = "VmRSS") -> float:
    """The resident memory now, or at its peak with VmHWM."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
