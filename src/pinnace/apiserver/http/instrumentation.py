"""kube-apiserver's request metrics, served at `/metrics` in the Prometheus text format
(k8s.io/apiserver/pkg/endpoints/metrics/metrics.go, v1.32):

- `apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`
- `apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,
  component}`, with kube-apiserver's buckets
- `apiserver_current_inflight_requests{request_kind}` (readOnly, mutating; long-running requests
  are not counted, as the max-in-flight filter leaves them out)
- `apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,component}`: the
  watches, followed logs and streaming sessions open now

The verb is kube-apiserver's: GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE,
DELETECOLLECTION, and CONNECT for the log, exec, attach, portforward and proxy subresources (a
WebSocket session is long-running while it lasts, its code 101 once upgraded); a path that is
not a resource has empty group, version and resource and its path as subresource (a proxy
subresource's path beyond `proxy` is not part of it). Counts live
in plain dicts updated once per request (cheaper than a client-library metric each); the
families are built when `/metrics` is read, into the registry of the cluster the app serves,
never the process-wide default one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from pinnace.api.gofloat import format_float
from pinnace.apiserver.http.params import go_bool
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.routes import ResourceTarget, Route, find

DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip
COMPONENT = "apiserver"
READ_ONLY_METHODS = ("GET", "HEAD", "OPTIONS")
APPLY_PATCH = "application/apply-patch+yaml"
CONNECT_SUBRESOURCES = ("log", "exec", "portforward", "attach", "proxy")
"""Subresources whose requests are counted as verb CONNECT (metrics.go's
validConnectRequests)."""

RequestLabels = tuple[str, str, str, str, str, str, str]
"""verb, dry_run, group, version, resource, subresource, scope."""


def request_labels(request: Request) -> RequestLabels:
    """kube-apiserver's RequestInfo of `request`, as the metrics label it."""
    dry_run = ",".join(sorted(request.query.get("dryRun", ())))
    target = request.target() or _proxied(request.path)
    if not isinstance(target, ResourceTarget):
        return (request.method, dry_run, "", "", "", request.path, "")
    kind = target.kind
    scope = "namespace" if target.namespace else "resource" if target.name else "cluster"
    return (
        _verb(request, target),
        dry_run,
        kind.group,
        target.conversion.served.version if target.conversion is not None else kind.version,
        kind.plural,
        target.subresource,
        scope,
    )


def _proxied(path: str) -> Route | None:
    """The resource whose proxy subresource `path` goes through with a path of its own
    (`/api/v1/nodes/NAME/proxy/metrics/cadvisor`): kube-apiserver's RequestInfo names the
    subresource `proxy` and leaves the rest out, so a scrape of every node is one series."""
    head, found, _ = path.partition("/proxy/")
    return find(head + "/proxy") if found else None


def _verb(request: Request, target: ResourceTarget) -> str:
    if target.subresource in CONNECT_SUBRESOURCES:
        return "CONNECT"
    method = request.method
    if method in ("GET", "HEAD"):
        if target.watch_path or go_bool(request.query, "watch"):
            return "WATCH"
        return "GET" if target.name else "LIST"
    if method == "DELETE" and not target.name:
        return "DELETECOLLECTION"
    if method == "PATCH" and request.header("content-type").startswith(APPLY_PATCH):
        return "APPLY"
    return method


@dataclass
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * len(DURATION_BUCKETS))
    total: float = 0.0
    observations: int = 0

    def observe(self, seconds: float) -> None:
        index = bisect.bisect_left(DURATION_BUCKETS, seconds)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += seconds
        self.observations += 1

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, out = 0, []
        for bound, count in zip(DURATION_BUCKETS, self.counts, strict=True):
            cumulative += count
            out.append((format_float(bound), float(cumulative)))
        out.append(("+Inf", float(self.observations)))
        return out


class RequestMetrics(Collector):
    """The request metrics of one API server's HTTP front end."""

    def __init__(self) -> None:
        self.requests: dict[tuple[RequestLabels, str], int] = {}
        self.durations: dict[RequestLabels, _Histogram] = {}
        self.inflight = {"readOnly": 0, "mutating": 0}
        self.longrunning: dict[RequestLabels, int] = {}

    def started(self, request: Request) -> str:
        """Count `request` in flight; returns its request kind, for `finished`."""
        kind = "readOnly" if request.method in READ_ONLY_METHODS else "mutating"
        self.inflight[kind] += 1
        return kind

    def finished(self, request_kind: str) -> None:
        self.inflight[request_kind] -= 1

    def streaming(self, labels: RequestLabels, delta: int) -> None:
        """A long-running request (a watch) opens (+1) or ends (-1)."""
        self.longrunning[labels] = self.longrunning.get(labels, 0) + delta

    def record(self, labels: RequestLabels, code: int, seconds: float) -> None:
        key = (labels, str(code))
        self.requests[key] = self.requests.get(key, 0) + 1
        histogram = self.durations.get(labels)
        if histogram is None:
            histogram = self.durations[labels] = _Histogram()
        histogram.observe(seconds)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        names = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope"]
        total = CounterMetricFamily(
            "apiserver_request",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
            "group, version, resource, scope, component, and HTTP response code.",
            labels=[*names, "component", "code"],
        )
        for (labels, code), count in self.requests.items():
            total.add_metric([*labels, COMPONENT, code], count)
        yield total
        duration = HistogramMetricFamily(
            "apiserver_request_duration_seconds",
            "[STABLE] Response latency distribution in seconds for each verb, dry run value, "
            "group, version, resource, subresource, scope and component.",
            labels=[*names, "component"],
        )
        for labels, histogram in self.durations.items():
            duration.add_metric([*labels, COMPONENT], histogram.buckets(), histogram.total)
        yield duration
        inflight = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "[STABLE] Maximal number of currently used inflight request limit of this apiserver "
            "per request kind in last second.",
            labels=["request_kind"],
        )
        for kind, count in self.inflight.items():
            inflight.add_metric([kind], count)
        yield inflight
        longrunning = GaugeMetricFamily(
            "apiserver_longrunning_requests",
            "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, "
            "group, version, resource, scope and component. Not all requests are tracked this "
            "way.",
            labels=["verb", "group", "version", "resource", "subresource", "scope", "component"],
        )
        for labels, count in self.longrunning.items():
            verb, _, *rest = labels
            longrunning.add_metric([verb, *rest, COMPONENT], count)
        yield longrunning
