"""The endpoints controller: an Endpoints object per Service with a selector, named as the
Service, listing its pods as kube-controller-manager v1.32's does
(pkg/controller/endpoint/endpoints_controller.go).

Ready pods are `addresses`, the others `notReadyAddresses` (all of them `addresses` when the
Service publishes not-ready addresses); finished pods, pods without an IP and pods being
deleted (unless not-ready addresses are published) are left out. Each Service port gives an
endpoint port with the number its targetPort resolves to on the pod; a pod where a named
targetPort resolves to nothing is left out of that port. Subsets group the addresses that
share the same ports (RepackSubsets). The Endpoints carries the Service's labels, plus
`service.kubernetes.io/headless` for a headless Service, and
`endpoints.kubernetes.io/last-change-trigger-time` (when the change it reflects happened), and
goes when the Service goes. Past 1000 addresses it is truncated, ready addresses kept first,
in proportion to each subset's share, and annotated `endpoints.kubernetes.io/over-capacity:
truncated`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory
from pinnace.controllers.controller_utils import (
    WorkQueue,
    is_pod_ready,
    namespace_terminating,
    split_key,
)
from pinnace.controllers.service_pods import (
    HEADLESS_LABEL,
    PODS,
    SERVICES,
    ServicePodWatch,
    TriggerTimeTracker,
    find_port,
    is_headless,
    managed,
    pod_ip,
    service_selector,
    should_pod_be_in_endpoints,
    should_set_hostname,
    target_ref,
    with_trigger_time,
)

ENDPOINTS = catalog.kind("", "endpoints")
MAX_CAPACITY = 1000
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"


def _address(pod: Object, service: Object) -> Object:
    address: Object = {"ip": pod_ip(pod)}
    if should_set_hostname(pod, service):
        address["hostname"] = pod["spec"]["hostname"]
    if pod.get("spec", {}).get("nodeName"):
        address["nodeName"] = pod["spec"]["nodeName"]
    address["targetRef"] = target_ref(pod)
    return address


def _port(service_port: Object, number: int) -> Object:
    port: Object = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol") is not None:
        port["appProtocol"] = service_port["appProtocol"]
    return port


def _port_key(port: Object) -> tuple[Any, ...]:
    return (
        port.get("name") or "",
        port.get("port", 0),
        port.get("protocol") or "TCP",
        port.get("appProtocol"),
    )


def _identity(address: Object) -> str:
    return f"{address.get('ip', '')}/{(address.get('targetRef') or {}).get('uid', '')}"


def repack_subsets(subsets: list[Object]) -> list[Object]:
    """RepackSubsets of any Endpoints' subsets (a user's, before they are mirrored)."""
    by_port: dict[tuple[Any, ...] | None, dict[str, tuple[Object, bool]]] = {}
    port_of: dict[tuple[Any, ...], Object] = {}
    for subset in subsets:
        for port in subset.get("ports") or [None]:
            key = None if port is None else _port_key(port)
            if port is not None:
                port_of[_port_key(port)] = port
            members = by_port.setdefault(key, {})
            for ready, field in ((True, "addresses"), (False, "notReadyAddresses")):
                for address in subset.get(field) or ():
                    members.setdefault(_identity(address), (address, ready))
    return _repack(by_port, port_of)


def desired_subsets(service: Object, pods: list[Object]) -> list[Object]:
    """The Service's subsets for these (selected) pods."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    ports = spec.get("ports") or []
    # address -> ready, per port (None: a headless Service without ports)
    by_port: dict[tuple[Any, ...] | None, dict[str, tuple[Object, bool]]] = {}
    port_of: dict[tuple[Any, ...], Object] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, publish):
            continue
        address = _address(pod, service)
        ready = publish or is_pod_ready(pod)
        identity = _identity(address)
        if not ports:
            if is_headless(service):
                by_port.setdefault(None, {})[identity] = (address, ready)
            continue
        for service_port in ports:
            number = find_port(pod, service_port)
            if number is None:
                continue
            port = _port(service_port, number)
            port_of[_port_key(port)] = port
            by_port.setdefault(_port_key(port), {})[identity] = (address, ready)
    return _repack(by_port, port_of)


def _repack(
    by_port: dict[tuple[Any, ...] | None, dict[str, tuple[Object, bool]]],
    port_of: dict[tuple[Any, ...], Object],
) -> list[Object]:
    """RepackSubsets: one subset per set of addresses, with every port they all offer."""
    groups: dict[tuple[tuple[str, bool], ...], list[tuple[Any, ...] | None]] = {}
    addresses: dict[tuple[tuple[str, bool], ...], dict[str, tuple[Object, bool]]] = {}
    for key, members in by_port.items():
        identity = tuple(sorted((k, ready) for k, (_, ready) in members.items()))
        groups.setdefault(identity, []).append(key)
        addresses[identity] = members
    subsets = []
    for identity, keys in groups.items():
        members = addresses[identity]
        ready = [a for a, r in members.values() if r]
        not_ready = [a for a, r in members.values() if not r]
        subset: Object = {}
        if ready:
            subset["addresses"] = sorted(ready, key=_address_order)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_address_order)
        ports = sorted((port_of[k] for k in keys if k is not None), key=_port_key)
        if ports:
            subset["ports"] = ports
        subsets.append(subset)
    return sorted(subsets, key=_subset_order)


def _address_order(address: Object) -> tuple[str, str]:
    return address.get("ip", ""), (address.get("targetRef") or {}).get("uid", "")


def _subset_order(subset: Object) -> tuple[Any, ...]:
    first = (subset.get("addresses") or subset.get("notReadyAddresses") or [{}])[0]
    return first.get("ip", ""), [_port_key(p) for p in subset.get("ports") or []]


def desired_labels(service: Object) -> dict[str, str]:
    labels = {
        k: v for k, v in (service["metadata"].get("labels") or {}).items() if k != HEADLESS_LABEL
    }
    if is_headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


def _count(subsets: list[Object], key: str) -> int:
    return sum(len(s.get(key) or []) for s in subsets)


def truncate(subsets: list[Object]) -> bool:
    """truncateEndpoints: keep at most 1000 addresses, ready ones first, each subset keeping
    its share (rounded up); whether anything was cut."""
    ready, not_ready = _count(subsets, "addresses"), _count(subsets, "notReadyAddresses")
    if ready + not_ready <= MAX_CAPACITY:
        return False
    cut_ready = ready > MAX_CAPACITY
    room, total = (MAX_CAPACITY, ready) if cut_ready else (MAX_CAPACITY - ready, not_ready)
    left = room
    for subset in subsets:
        key = "addresses" if cut_ready else "notReadyAddresses"
        share = -(-len(subset.get(key) or []) * room // total)
        kept = (subset.get(key) or [])[: min(share, left)]
        subset[key] = kept
        if cut_ready:
            subset["notReadyAddresses"] = []
        left -= len(kept)
    return True


def _capacity_annotation_right(endpoints: Object) -> bool:
    subsets = endpoints.get("subsets") or []
    if _count(subsets, "addresses") + _count(subsets, "notReadyAddresses") > MAX_CAPACITY:
        return False
    return OVER_CAPACITY_ANNOTATION not in (endpoints["metadata"].get("annotations") or {})


class EndpointsController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._services: Informer = informers.informer(SERVICES)
        self._pods: Informer = informers.informer(PODS)
        self._endpoints: Informer = informers.informer(ENDPOINTS)
        self._trigger_times = TriggerTimeTracker()
        ServicePodWatch(self._services, self._pods, self._queue.add)

    async def run(self) -> None:
        """Keep every Service's Endpoints forever; cancel the task to stop."""
        for informer in (self._services, self._pods, self._endpoints):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self._services.get(namespace, name)
        if service is None:
            self._trigger_times.forget(key)
            if self._endpoints.get(namespace, name) is not None:
                await self._delete(namespace, name)
            return
        if not managed(service):
            return
        pods = self._pods.list(namespace, service_selector(service))
        trigger_time = self._trigger_times.compute(key, service, pods)
        subsets = desired_subsets(service, pods)
        labels = desired_labels(service)
        current = self._endpoints.get(namespace, name)
        if (
            current is not None
            and (current.get("subsets") or []) == subsets
            and (current["metadata"].get("labels") or {}) == labels
            and _capacity_annotation_right(current)
        ):
            return
        base = current or {"metadata": {"name": name, "namespace": namespace}}
        new = with_trigger_time(
            {**base, "metadata": {**base["metadata"], "labels": labels}}, trigger_time
        )
        annotations = dict(new["metadata"].get("annotations") or {})
        if truncate(subsets):
            annotations[OVER_CAPACITY_ANNOTATION] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY_ANNOTATION, None)
        new["metadata"].pop("annotations", None)
        if annotations:
            new["metadata"]["annotations"] = annotations
        new.pop("subsets", None)
        if subsets:
            new["subsets"] = subsets
        if current is not None:
            await self._write(self._client.update(ENDPOINTS, new))
        elif not await self._write(self._client.create(ENDPOINTS, namespace, new)):
            self._queue.add_rate_limited(key)  # the cache had not seen it yet: sync again

    async def _write(self, request: Awaitable[Object]) -> bool:
        """Whether the write was made: a create of what exists already is not (the cache is
        behind), nor a write to a namespace being deleted."""
        try:
            await request
        except StatusError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                return False
            if namespace_terminating(e):
                return True  # the namespace is terminating
            raise
        return True

    async def _delete(self, namespace: str, name: str) -> None:
        try:
            await self._client.delete(ENDPOINTS, namespace, name)
        except StatusError as e:
            if e.code != 404:
                raise
