"""The EndpointSlice controller: the EndpointSlices of every Service with a selector, as
kube-controller-manager v1.32's (pkg/controller/endpointslice and its reconciler in
staging/src/k8s.io/endpointslice).

Every pod the Service selects that has an IP and has not finished is an endpoint, a pod
being deleted included: its conditions say `ready` (serving and not terminating, or always
when the Service publishes not-ready addresses), `serving` (the pod is Ready) and
`terminating`. With `trafficDistribution: PreferClose` each ready endpoint in a zone gets a
hint for its own zone (trafficdist's preferCloseHeuristic). Endpoints with the same resolved
ports share slices of at most 100 (--max-endpoints-per-slice). A slice is named
`<service>-<random>`, labelled `kubernetes.io/service-name` and
`endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` (with the Service's
labels, and
`service.kubernetes.io/headless` for a headless Service), and owned by the Service, so the
garbage collector removes it with the Service, and annotated
`endpoints.kubernetes.io/last-change-trigger-time` when written. A Service selecting nothing
keeps one empty placeholder slice. Existing slices are kept where they still fit, and changed
only where their endpoints changed; new endpoints fill the room in changed slices first, and a
slice that would be made while another is deleted is written over that one instead (so the
placeholder becomes the first real slice).

As the upstream controller's slice tracker does, a sync waits (requeued) until the informer
has seen the controller's own last writes for the Service, so a stale cache never makes it
create a slice twice.
"""

from __future__ import annotations

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
from pinnace.controllers.endpoints import desired_labels
from pinnace.controllers.service_pods import (
    PODS,
    SERVICES,
    ServicePodWatch,
    SliceWrites,
    TriggerTimeTracker,
    find_port,
    managed,
    pod_ip,
    service_selector,
    should_pod_be_in_endpoints,
    should_set_hostname,
    target_ref,
    with_trigger_time,
)

ENDPOINT_SLICES = catalog.kind("discovery.k8s.io", "endpointslices")
NODES = catalog.kind("", "nodes")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100
ZONE_LABEL = "topology.kubernetes.io/zone"
PREFER_CLOSE = "PreferClose"
TOPOLOGY_ANNOTATIONS = (
    "service.kubernetes.io/topology-mode",
    "service.kubernetes.io/topology-aware-hints",
)

PortsKey = tuple[tuple[Any, ...], ...]


def _endpoint(pod: Object, service: Object, zone: str | None) -> Object:
    """podToEndpoint."""
    serving = is_pod_ready(pod)
    terminating = bool(pod["metadata"].get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Object = {
        "addresses": [pod_ip(pod)],
        "conditions": {
            "ready": publish or (serving and not terminating),
            "serving": serving,
            "terminating": terminating,
        },
        "targetRef": target_ref(pod),
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    if zone:
        endpoint["zone"] = zone
    if should_set_hostname(pod, service):
        endpoint["hostname"] = pod["spec"]["hostname"]
    if zone and endpoint["conditions"]["ready"] and _prefers_close(service):
        endpoint["hints"] = {"forZones": [{"name": zone}]}
    return endpoint


def _prefers_close(service: Object) -> bool:
    """trafficdist's preferCloseHeuristic applies: `trafficDistribution: PreferClose`, and no
    topology-mode annotation asking for topology-aware hints instead."""
    annotations = service["metadata"].get("annotations") or {}
    if any(annotations.get(key) for key in TOPOLOGY_ANNOTATIONS):
        return False
    return (service.get("spec") or {}).get("trafficDistribution") == PREFER_CLOSE


def _ports(pod: Object, service: Object) -> list[Object]:
    """getEndpointPorts: each Service port with its number on this pod."""
    ports = []
    for service_port in (service.get("spec") or {}).get("ports") or ():
        number = find_port(pod, service_port)
        if number is not None:
            ports.append(slice_port(service_port, number))
    return ports


def slice_port(port: Object, number: int) -> Object:
    """An EndpointPort: the port's name, protocol and appProtocol, with this number."""
    sliced: Object = {
        "name": port.get("name") or "",
        "port": number,
        "protocol": port.get("protocol") or "TCP",
    }
    if port.get("appProtocol") is not None:
        sliced["appProtocol"] = port["appProtocol"]
    return sliced


def ports_key(ports: list[Object]) -> PortsKey:
    return tuple(sorted((p["name"], p["port"], p["protocol"], p.get("appProtocol")) for p in ports))


def _recycled(writes: list[tuple[str, Object]], owner_uid: str) -> list[tuple[str, Object]]:
    """The writes in the reconciler's order (creates, updates, deletes), a slice to create
    taking the place of one to delete of the same address type that the Service owns: that
    one is updated under its own name instead (finalize)."""
    creates = [obj for verb, obj in writes if verb == "create"]
    updates = [obj for verb, obj in writes if verb == "update"]
    deletes = []
    for old in (obj for verb, obj in writes if verb == "delete"):
        owners = {ref.get("uid") for ref in old["metadata"].get("ownerReferences") or ()}
        if creates and creates[-1]["addressType"] == old.get("addressType") and owner_uid in owners:
            new = creates.pop()
            metadata = {**old["metadata"], "labels": new["metadata"]["labels"]}
            updates.append({**old, **new, "metadata": metadata})
        else:
            deletes.append(old)
    return [
        *(("create", o) for o in creates),
        *(("update", o) for o in updates),
        *(("delete", o) for o in deletes),
    ]


def _uid(endpoint: Object) -> str:
    return str((endpoint.get("targetRef") or {}).get("uid", ""))


class EndpointSliceController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._services: Informer = informers.informer(SERVICES)
        self._pods: Informer = informers.informer(PODS)
        self._nodes: Informer = informers.informer(NODES)
        self._slices: Informer = informers.informer(ENDPOINT_SLICES)
        self._trigger_times = TriggerTimeTracker()
        self._writes = SliceWrites(self._slices)
        ServicePodWatch(self._services, self._pods, self._queue.add)

    async def run(self) -> None:
        """Keep every Service's EndpointSlices forever; cancel the task to stop."""
        for informer in (self._services, self._pods, self._nodes, self._slices):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    def _zone(self, pod: Object) -> str | None:
        node = self._nodes.get("", (pod.get("spec") or {}).get("nodeName") or "")
        return None if node is None else (node["metadata"].get("labels") or {}).get(ZONE_LABEL)

    def _owned(self, service: Object) -> list[Object]:
        m = service["metadata"]
        return [
            s
            for s in self._slices.list(m.get("namespace", ""))
            if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == m["name"]
            and (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME
        ]

    def desired(
        self, service: Object, pods: list[Object]
    ) -> dict[PortsKey, tuple[list[Object], dict[str, Object]]]:
        """Ports key -> (the ports, the endpoints by pod uid)."""
        groups: dict[PortsKey, tuple[list[Object], dict[str, Object]]] = {}
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            if not should_pod_be_in_endpoints(pod, include_terminating=True):
                continue
            ports = _ports(pod, service)
            group = groups.setdefault(ports_key(ports), (ports, {}))
            group[1][pod["metadata"]["uid"]] = _endpoint(pod, service, self._zone(pod))
        return groups

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self._services.get(namespace, name)
        if service is None or not managed(service):
            self._writes.forget(key)
            self._trigger_times.forget(key)
            return  # the garbage collector removes the slices of a deleted Service
        if not self._writes.caught_up(key, namespace):
            self._queue.add_rate_limited(key)
            return
        existing = self._owned(service)
        pods = self._pods.list(namespace, service_selector(service))
        trigger_time = self._trigger_times.compute(key, service, pods)
        groups = self.desired(service, pods)
        writes: list[tuple[str, Object]] = []
        kept: set[str] = set()
        for group_key, (ports, endpoints) in groups.items():
            fitting = [s for s in existing if ports_key(s.get("ports") or []) == group_key]
            writes += self._reconcile_group(service, ports, endpoints, fitting)
            kept.update(s["metadata"]["name"] for s in fitting)
        stale = [s for s in existing if s["metadata"]["name"] not in kept]
        if not groups:
            placeholder = next((s for s in stale if not s.get("endpoints")), None)
            if placeholder is None:
                writes.append(("create", self._new_slice(service, [], [])))
            else:
                stale.remove(placeholder)
                writes += self._relabelled(service, [placeholder])
        writes += [("delete", s) for s in stale]
        for verb, obj in _recycled(writes, service["metadata"]["uid"]):
            if verb != "delete":
                obj = with_trigger_time(obj, trigger_time)
            stored = await self._apply(verb, obj)
            if stored is not None or verb == "delete":
                self._writes.record(key, obj, stored)

    def _reconcile_group(
        self,
        service: Object,
        ports: list[Object],
        endpoints: dict[str, Object],
        slices: list[Object],
    ) -> list[tuple[str, Object]]:
        """Update slices whose endpoints changed, fill their room with new endpoints, then
        the room of unchanged ones, then new slices; delete slices left empty."""
        remaining = dict(endpoints)
        updated: list[Object] = []
        unchanged: list[Object] = []
        writes: list[tuple[str, Object]] = []
        for s in sorted(slices, key=lambda s: s["metadata"]["name"]):
            current = s.get("endpoints") or []
            wanted = [remaining.pop(_uid(e)) for e in current if _uid(e) in remaining]
            if not wanted:
                writes.append(("delete", s))
            elif wanted != current:
                updated.append({**s, "endpoints": wanted})
            else:
                unchanged.append(s)
        for s in [*updated, *unchanged]:
            room = MAX_ENDPOINTS_PER_SLICE - len(s["endpoints"])
            if room > 0 and remaining:
                taken = list(remaining)[:room]
                extra = [remaining.pop(uid) for uid in taken]
                if s in unchanged:
                    unchanged.remove(s)
                    s = {**s}
                    updated.append(s)
                s["endpoints"] = [*s["endpoints"], *extra]
        writes += [("update", s) for s in updated]
        writes += self._relabelled(service, unchanged)
        fresh = list(remaining.values())
        for start in range(0, len(fresh), MAX_ENDPOINTS_PER_SLICE):
            chunk = fresh[start : start + MAX_ENDPOINTS_PER_SLICE]
            writes.append(("create", self._new_slice(service, ports, chunk)))
        return [(verb, self._labelled(service, s)) for verb, s in writes]

    def _relabelled(self, service: Object, slices: list[Object]) -> list[tuple[str, Object]]:
        """The slices whose labels no longer match the Service's."""
        return [
            ("update", self._labelled(service, s))
            for s in slices
            if s["metadata"].get("labels") != self._labels(service)
        ]

    def _labels(self, service: Object) -> dict[str, str]:
        labels = desired_labels(service)
        labels[SERVICE_NAME_LABEL] = service["metadata"]["name"]
        labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
        return labels

    def _labelled(self, service: Object, slice_: Object) -> Object:
        return {**slice_, "metadata": {**slice_["metadata"], "labels": self._labels(service)}}

    def _new_slice(self, service: Object, ports: list[Object], endpoints: list[Object]) -> Object:
        m = service["metadata"]
        return {
            "metadata": {
                "generateName": f"{m['name']}-",
                "namespace": m.get("namespace", ""),
                "labels": self._labels(service),
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": m["name"],
                        "uid": m["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": ((service.get("spec") or {}).get("ipFamilies") or ["IPv4"])[0],
            "endpoints": endpoints,
            "ports": ports,
        }

    async def _apply(self, verb: str, obj: Object) -> Object | None:
        """The slice as stored by a create or update; None for a delete."""
        namespace = obj["metadata"].get("namespace", "")
        try:
            if verb == "create":
                return await self._client.create(ENDPOINT_SLICES, namespace, obj)
            if verb == "update":
                return await self._client.update(ENDPOINT_SLICES, obj)
            await self._client.delete(ENDPOINT_SLICES, namespace, obj["metadata"]["name"])
        except StatusError as e:
            if e.code == 404 and verb == "delete":
                return None
            if namespace_terminating(e):
                return None  # the namespace is terminating
            raise
        return None
