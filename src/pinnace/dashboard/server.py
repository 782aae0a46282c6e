"""The dashboard's server side: a component with informers on what the page shows (nodes,
pods, Events, Deployments, Jobs, DaemonSets, HPAs), as kube-state-metrics keeps its own
(kubernetes/kube-state-metrics internal/store), and the HTTP paths below DASHBOARD_PATH:

- `/` and its static files, with the plotly.js the `plotly` package ships (nothing is fetched
  from the network);
- `/api/snapshot`: the snapshot (`dashboard.snapshot`) as JSON; `/api/snapshot/NODE,NODE`:
  the same with only the nodes named (none for `/api/snapshot/`), so that a page updates the
  cards of the nodes a change touched without reading the others;
- `/api/pods/NAMESPACE/NAME`: one pod's requests, limits and usage now, and its usage
  history;
- `/api/history`: the cluster's series over the history's window (`metrics.history`), and
  the charts of them (`dashboard.charts`, as the simulation's report draws them);
- `/api/workloads/KIND/NAMESPACE/NAME`: a workload's replicas over the history's window (a
  VerticalPodAutoscaler's, `vpas`: its target CPU and memory);
- `/events`: server-sent events, one per change the informers see (watch-driven), so the
  page refreshes only when something changed; Events go with their reason and message, pods
  with the node they are bound to ("" for none).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from importlib import resources
from typing import Any

import orjson

from pinnace.api import catalog
from pinnace.api.core.event import EVENT, last_seen
from pinnace.api.objects import Object
from pinnace.api.stats import Summary
from pinnace.apiserver.http.app import DASHBOARD_PATH
from pinnace.apiserver.http.responses import Response, json_response
from pinnace.apiserver.http.routes import not_found
from pinnace.client import Client, Informer, object_key
from pinnace.clock.component import StartedOnFirstUse
from pinnace.dashboard import charts, snapshot
from pinnace.metrics.history import UsageHistory
from pinnace.metrics.recorder import VPAS, WORKLOADS
from pinnace.store.codec import Codec

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}
PLOTLY = "/plotly.min.js"
RECOMMENDED = "vpas"
"""The workload page of a VerticalPodAutoscaler: its recommendation over time."""
FAILED_SCHEDULING = "failed-scheduling"
SUBSCRIBER_BACKLOG = 1000
"""Changes a slow page may fall behind by; past that it misses some, and its next refresh
still shows the cluster as it is."""
RECENT_EVENTS = 50
SSE_HEADERS = [("x-accel-buffering", "no")]

Summaries = Callable[[], Mapping[str, Summary]]


def _failed_scheduling(event: Object) -> list[str]:
    involved = event.get("involvedObject") or {}
    if event.get("reason") != "FailedScheduling" or involved.get("kind") != "Pod":
        return []
    return [f"{involved.get('namespace', '')}/{involved.get('name', '')}"]


class Dashboard:
    """A component; `respond(path)` answers the paths below DASHBOARD_PATH. `summaries` gives
    every node's stats summary now (the kubelets'), for a pod's usage now; `history` has the
    samples behind the charts and the nodes' usage."""

    def __init__(
        self,
        client: Client,
        summaries: Summaries,
        history: UsageHistory,
        codec: Codec | None = None,
    ) -> None:
        self.summaries = summaries
        self.history = history
        self._rows: dict[str, snapshot.PodRow] = {}
        self._on_node: dict[str, dict[str, snapshot.PodRow]] = {}
        """The rows by node ("": pods not bound), so that a node's card reads only its pods."""
        self.pods = Informer(client, catalog.kind("", "pods"), codec=codec, namespace_index=False)
        self.nodes = Informer(client, catalog.kind("", "nodes"))
        self.events = Informer(client, EVENT, codec=codec, namespace_index=False)
        self.events.add_indexer(FAILED_SCHEDULING, _failed_scheduling)
        self._recent = RecentEvents(self.events, RECENT_EVENTS)
        self.workloads = {name: Informer(client, kind) for name, kind in WORKLOADS.items()}
        self.workloads[RECOMMENDED] = Informer(client, VPAS)
        self.informers = (self.pods, self.nodes, self.events, *self.workloads.values())
        self._caches = StartedOnFirstUse(self.informers)
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()
        self._plotly: bytes | None = None
        for informer in self.informers:
            self._watch(informer)
        self.pods.add_event_handler(self._pod_changed, lambda _, new: self._pod_changed(new),
                                    self._pod_deleted)  # fmt: skip

    def _watch(self, informer: Informer) -> None:
        kind = informer.kind.plural

        def changed(change: str) -> Callable[..., None]:
            return lambda *objs: self._publish(kind, change, objs[-1])

        informer.add_event_handler(changed("ADDED"), changed("MODIFIED"), changed("DELETED"))

    async def start(self) -> None:
        """Nothing yet: the caches start with the first page that asks (`respond`)."""

    async def ready(self) -> None:
        """Have the caches started and synced."""
        await self._caches.ready()

    async def stop(self) -> None:
        for queue in self._subscribers:
            _offer(queue, None)
        await self._caches.stop()

    def _pod_changed(self, pod: Object) -> None:
        row = snapshot.pod_row(pod)
        self._pod_deleted(pod)
        if row is not None:
            self._rows[row.key] = row
            self._on_node.setdefault(row.node, {})[row.key] = row

    def _pod_deleted(self, pod: Object) -> None:
        row = self._rows.pop(object_key(pod), None)
        if row is not None:
            on_node = self._on_node[row.node]
            del on_node[row.key]
            if not on_node:
                del self._on_node[row.node]

    # --- what the page reads -------------------------------------------------------------

    def snapshot(self, only: list[str] | None = None) -> dict[str, Any]:
        """What the page shows; of the nodes, only those named in `only` when given."""
        rows: Iterable[snapshot.PodRow]
        if only is None:
            nodes, rows = self.nodes.list(), self._rows.values()
        else:
            nodes = [n for n in (self.nodes.get("", name) for name in only) if n is not None]
            rows = [r for name in ("", *only) for r in self._on_node.get(name, {}).values()]
        nodes, pending = snapshot.nodes_and_pending(
            nodes, rows, self._last_failed, self.history.last_nodes()
        )
        return {
            "nodes": nodes,
            "pending": pending,
            "workloads": {
                name: [snapshot.workload_view(name, o) for o in _by_name(informer.list())]
                for name, informer in self.workloads.items()
            },
            "events": self.recent_events(),
        }

    def _last_failed(self, key: str) -> Object | None:
        return max(self.events.by_index(FAILED_SCHEDULING, key), key=last_seen, default=None)

    def recent_events(self) -> list[dict[str, Any]]:
        return [snapshot.event_view(e) for e in self._recent.latest()]

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.pods.get(namespace, name)
        if pod is None:
            raise not_found()
        summary = self.summaries().get((pod.get("spec") or {}).get("nodeName", ""))
        uid = pod["metadata"].get("uid")
        stats = next((p for p in summary.pods if p.uid == uid), None) if summary else None
        view = snapshot.pod_view(pod, stats)
        view["history"] = self.history.pod(f"{namespace}/{name}")
        return view

    def cluster_history(self) -> dict[str, Any]:
        """The series, and the charts of them (`charts`; x: seconds since the epoch)."""
        series, fragmentation = self.history.cluster_series(), self.history.fragmentation()
        return {
            "resolution": self.history.resolution,
            "series": series,
            "fragmentation": fragmentation,
            "charts": charts.over_time(
                series, fragmentation, self.history.resolution, {"type": "date"}
            ),
        }

    def workload_history(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """A workload's replicas over the window: none yet for one created since the last
        sample; 404 for one that does not exist."""
        informer = self.workloads.get(kind)
        if informer is None or informer.get(namespace, name) is None:
            raise not_found()
        if kind == RECOMMENDED:
            found = self.history.recommendation(f"{namespace}/{name}")
            return found or {"time": [], "cpu": [], "memory": []}
        found = self.history.workload(f"{kind}/{namespace}/{name}")
        return found or {"time": [], "desired": [], "ready": []}

    # --- HTTP ----------------------------------------------------------------------------

    async def respond(self, path: str) -> Response:
        """What is served at DASHBOARD_PATH + `path`."""
        await self.ready()
        if path == "":
            return Response(301, headers=[("location", DASHBOARD_PATH + "/")])
        if path in STATIC:
            name, content_type = STATIC[path]
            return Response(200, _static(name), content_type)
        if path == PLOTLY:
            return Response(200, self._plotly_js(), "text/javascript; charset=utf-8")
        if path == "/api/snapshot":
            return json_response(self.snapshot())
        if path.startswith("/api/snapshot/"):
            names = path[len("/api/snapshot/") :].split(",")
            return json_response(self.snapshot([name for name in names if name]))
        if path.startswith("/api/pods/"):
            parts = path[len("/api/pods/") :].split("/")
            if len(parts) != 2 or not all(parts):
                raise not_found()
            return json_response(self.pod(*parts))
        if path == "/api/history":
            return json_response(self.cluster_history())
        if path.startswith("/api/workloads/"):
            parts = path[len("/api/workloads/") :].split("/")
            if len(parts) != 3 or not all(parts):
                raise not_found()
            return json_response(self.workload_history(*parts))
        if path == "/events":
            return Response(
                200,
                content_type="text/event-stream",
                headers=SSE_HEADERS,
                stream=self._stream(),
                timeout=None,
            )
        raise not_found()

    def _plotly_js(self) -> bytes:
        if self._plotly is None:
            self._plotly = (
                resources.files("plotly") / "package_data" / "plotly.min.js"
            ).read_bytes()
        return self._plotly

    def _publish(self, kind: str, change: str, obj: Object) -> None:
        if not self._subscribers:
            return
        message: dict[str, Any] = {"kind": kind, "type": change, "name": obj["metadata"]["name"]}
        message["namespace"] = obj["metadata"].get("namespace", "")
        if kind == "pods":
            message["node"] = (obj.get("spec") or {}).get("nodeName", "")
        if kind == "events" and change != "DELETED":
            message["event"] = snapshot.event_view(obj)
        data = b"data: " + orjson.dumps(message) + b"\n\n"
        for queue in self._subscribers:
            _offer(queue, data)

    async def _stream(self) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(SUBSCRIBER_BACKLOG)
        self._subscribers.add(queue)
        try:
            yield b"retry: 2000\n\n"
            while (chunk := await queue.get()) is not None:
                yield chunk
        finally:
            self._subscribers.discard(queue)


def _offer(queue: asyncio.Queue[bytes | None], item: bytes | None) -> None:
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(item)


Order = tuple[str, int]
"""An Event's place in time: its last time, then its resourceVersion (the later write)."""
LEAST: Order = ("", -1)


class RecentEvents:
    """The latest `size` Events of an informer, kept from its notifications, so that a
    snapshot (twice a second while the cluster changes) does not sort every Event held (one
    or more per pod). Holds up to twice `size`, and every Event it does not hold is no later
    than `floor`."""

    def __init__(self, informer: Informer, size: int) -> None:
        self.size = size
        self._informer = informer
        self._held: dict[str, tuple[Order, Object]] = {}
        self._floor = LEAST
        informer.add_event_handler(self._seen, lambda _, new: self._seen(new), self._gone)

    def latest(self) -> list[Object]:
        """Oldest first."""
        held = heapq.nlargest(self.size, self._held.values(), key=lambda h: h[0])
        return [event for _, event in reversed(held)]

    def _seen(self, event: Object) -> None:
        key, order = object_key(event), _order(event)
        if key in self._held or order > self._floor:
            self._held[key] = (order, event)
            if len(self._held) > 2 * self.size:
                self._keep(list(self._held.items()))

    def _gone(self, event: Object) -> None:
        if self._held.pop(object_key(event), None) is None or len(self._held) >= self.size:
            return
        if len(self._informer.keys()) > len(self._held):  # some not held may be among the latest
            self._floor = LEAST
            self._keep([(object_key(e), (_order(e), e)) for e in self._informer.list()])

    def _keep(self, events: list[tuple[str, tuple[Order, Object]]]) -> None:
        kept = heapq.nlargest(self.size, events, key=lambda item: item[1][0])
        self._held = dict(kept)
        if len(kept) < len(events):
            self._floor = max(self._floor, min(order for _, (order, _) in kept))


def _order(event: Object) -> Order:
    return last_seen(event), int(event["metadata"].get("resourceVersion") or 0)


def _by_name(objs: list[Object]) -> list[Object]:
    return sorted(objs, key=object_key)


def _static(name: str) -> bytes:
    return (resources.files(__package__) / "static" / name).read_bytes()
