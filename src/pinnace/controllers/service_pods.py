"""What the endpoints and EndpointSlice controllers share, as kube-controller-manager v1.32
(staging/src/k8s.io/endpointslice/util, pkg/api/v1/pod FindPort): which Services a pod
belongs to, which pods may be endpoints, and the port a Service port reaches on a pod.

Both controllers watch Services and pods and sync a Service's key whenever it changes, or a
pod it selects (before or after the change) comes, goes or changes in a way an endpoint shows
(GetServicesToUpdateOnPodChange, podEndpointsChanged): other pod updates, such as a container's
restart count, sync nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from pinnace.api import catalog
from pinnace.api.labels import LabelSelector, selector_from_set
from pinnace.api.objects import Object
from pinnace.client import Informer, object_key
from pinnace.client.interest import Changed, Fact, Key, in_namespaces, interest
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.controller_utils import is_pod_ready

SERVICES = catalog.kind("", "services")
PODS = catalog.kind("", "pods")
HEADLESS_LABEL = "service.kubernetes.io/headless"
SELECTING_INDEX = "selectingNamespace"
"""Services with a selector, by namespace."""
TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"


def service_selector(service: Object) -> LabelSelector | None:
    """The Service's selector; None for a Service without one (its endpoints are the user's)."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return None
    return selector_from_set(selector)


def managed(service: Object) -> bool:
    """Whether the controllers keep this Service's endpoints: it has a selector and is not an
    ExternalName."""
    spec = service.get("spec") or {}
    return spec.get("type") != "ExternalName" and bool(spec.get("selector"))


def is_headless(service: Object) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def pod_ip(pod: Object) -> str:
    status = pod.get("status") or {}
    ips = status.get("podIPs") or []
    return str(status.get("podIP") or (ips[0].get("ip") if ips else "") or "")


def should_pod_be_in_endpoints(pod: Object, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: not finished, has an IP, and (unless asked) not being deleted."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not pod_ip(pod):
        return False
    return include_terminating or not pod["metadata"].get("deletionTimestamp")


def should_set_hostname(pod: Object, service: Object) -> bool:
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == service["metadata"]["name"]
        and pod["metadata"].get("namespace") == service["metadata"].get("namespace")
    )


def find_port(pod: Object, service_port: Object) -> int | None:
    """FindPort: a numeric targetPort as it is; a named one is the pod's container port of
    that name and the Service port's protocol (None when there is none)."""
    target = service_port.get("targetPort")
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port.get("containerPort", 0))
    return None


def target_ref(pod: Object) -> Object:
    m = pod["metadata"]
    return {"kind": "Pod", "namespace": m.get("namespace", ""), "name": m["name"], "uid": m["uid"]}


class ServicePodWatch:
    """Calls `enqueue` with the key of every Service a change concerns: the Service itself,
    or each Service selecting a pod before or after its change."""

    def __init__(self, services: Informer, pods: Informer, enqueue: Callable[[str], None]) -> None:
        self._services = services
        self._enqueue = enqueue
        services.add_event_handler(
            on_add=lambda s: enqueue(object_key(s)),
            on_update=lambda old, new: enqueue(object_key(new)),
            on_delete=lambda s: enqueue(object_key(s)),
        )
        with contextlib.suppress(ValueError):  # the other controller's watch did it
            services.add_indexer(SELECTING_INDEX, _selecting_namespace)
        # A pod concerns only a Service of its namespace with a selector, and of its updates
        # only those that may change its endpoint or the Services it belongs to.
        pods.add_event_handler(
            on_add=self._pod_changed,
            on_update=self._pod_updated,
            on_delete=self._pod_changed,
            interest=interest(
                in_namespaces(services.indexed(SELECTING_INDEX)),
                (Changed(_MEMBERSHIP + _ENDPOINT), Fact(_being_deleted)),
            ),
        )

    def _memberships(self, pod: Object) -> set[str]:
        namespace = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        found = set()
        for service in self._services.list(namespace):
            selector = service_selector(service)
            if selector is not None and selector.matches(labels):
                found.add(object_key(service))
        return found

    def _pod_changed(self, pod: Object) -> None:
        for key in sorted(self._memberships(pod)):
            self._enqueue(key)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync
        changed, relabelled = _endpoints_changed(old, new)
        if not changed and not relabelled:
            return
        services = self._memberships(new)
        if relabelled:
            before = self._memberships(old)
            # determineNeededServiceUpdates: a pod whose endpoint is unchanged concerns only
            # the Services it joined or left.
            services = services | before if changed else services ^ before
        for key in sorted(services):
            self._enqueue(key)


def _endpoints_changed(old: Object, new: Object) -> tuple[bool, bool]:
    """podEndpointsChanged: whether the pod's endpoint may differ (its deletion, readiness or
    IPs changed), and whether the Services it belongs to may (its labels, hostname or
    subdomain changed). Its name, namespace and uid never change, nor its node once it has an
    IP. kube-controller-manager compares deletionTimestamp pointers, which differ whenever one
    is set."""
    relabelled = any(key(old) != key(new) for key in _MEMBERSHIP)
    changed = (
        _being_deleted(old) or _being_deleted(new) or any(key(old) != key(new) for key in _ENDPOINT)
    )
    return changed, relabelled


def _being_deleted(pod: Object) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _labels(pod: Object) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def _hostname(pod: Object) -> str | None:
    return (pod.get("spec") or {}).get("hostname")


def _subdomain(pod: Object) -> str | None:
    return (pod.get("spec") or {}).get("subdomain")


def _ips(pod: Object) -> tuple[str, list[str]]:
    status = pod.get("status") or {}
    return pod_ip(pod), [entry.get("ip") for entry in status.get("podIPs") or ()]


_MEMBERSHIP: tuple[Key, ...] = (_labels, _hostname, _subdomain)
"""What decides the Services a pod belongs to."""
_ENDPOINT: tuple[Key, ...] = (is_pod_ready, _ips)
"""What its endpoint shows (with whether it is being deleted)."""


def _selecting_namespace(service: Object) -> list[str]:
    """The index of the Services that select pods: by namespace."""
    return [] if service_selector(service) is None else [service["metadata"]["namespace"]]


class TriggerTimeTracker:
    """When the change that an Endpoints or EndpointSlice write reflects happened, for the
    `endpoints.kubernetes.io/last-change-trigger-time` annotation (TriggerTimeTracker in
    pkg/controller/util/endpoint): the earliest of the pods' Ready transitions and the
    Service's creation that changed since the Service's last sync; the Service's creation on
    its first sync; "" when nothing changed."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[dict[str, float], float]] = {}

    def compute(self, key: str, service: Object, pods: list[Object]) -> str:
        known = self._states.get(key)
        last_pods, last_service = known or ({}, 0.0)
        earliest: tuple[float, str] | None = None
        pod_times: dict[str, float] = {}
        for pod in pods:
            text = _ready_transition(pod)
            if not text:
                continue
            at = parse_time(text)
            pod_times[pod["metadata"]["name"]] = at
            if at > last_pods.get(pod["metadata"]["name"], 0.0):
                earliest = min(earliest or (at, text), (at, text))
        created = service["metadata"].get("creationTimestamp") or ""
        service_at = parse_time(created) if created else 0.0
        if service_at > last_service:
            earliest = min(earliest or (service_at, created), (service_at, created))
        self._states[key] = (pod_times, service_at)
        if known is None:
            return created
        return earliest[1] if earliest is not None else ""

    def forget(self, key: str) -> None:
        self._states.pop(key, None)


def _ready_transition(pod: Object) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return str(condition.get("lastTransitionTime") or "")
    return ""


def with_trigger_time(obj: Object, trigger_time: str) -> Object:
    """`obj` with the annotation set to `trigger_time`, or without it when that is ""."""
    annotations = dict(obj["metadata"].get("annotations") or {})
    if trigger_time:
        annotations[TRIGGER_TIME_ANNOTATION] = trigger_time
    else:
        annotations.pop(TRIGGER_TIME_ANNOTATION, None)
    metadata = {**obj["metadata"], "annotations": annotations}
    if not annotations:
        del metadata["annotations"]
    return {**obj, "metadata": metadata}


class SliceWrites:
    """The EndpointSlice writes a controller made per Service, until its informer has seen
    them (the upstream controllers' slice tracker): a sync on a cache behind its own writes
    would make a slice twice."""

    def __init__(self, slices: Informer) -> None:
        self._slices = slices
        self._written: dict[str, dict[str, int]] = {}
        """Service key -> slice name -> the resourceVersion written (0: deleted)."""

    def record(self, key: str, slice_: Object, stored: Object | None) -> None:
        """A write of `slice_` for `key`: `stored` is what the API returned, None for a
        delete."""
        version = 0 if stored is None else int(stored["metadata"]["resourceVersion"])
        name = (stored or slice_)["metadata"]["name"]
        self._written.setdefault(key, {})[name] = version

    def caught_up(self, key: str, namespace: str) -> bool:
        written = self._written.get(key, {})
        for name, version in list(written.items()):
            cached = self._slices.get(namespace, name)
            if version == 0:
                if cached is not None:
                    return False
            elif cached is None or int(cached["metadata"]["resourceVersion"]) < version:
                return False
            del written[name]
        return True

    def forget(self, key: str) -> None:
        self._written.pop(key, None)
