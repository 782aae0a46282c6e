"""The EndpointSlice mirroring controller: Endpoints a user writes for a Service without a
selector get EndpointSlices to match, as kube-controller-manager v1.32's
(pkg/controller/endpointslicemirroring).

Only Endpoints whose Service exists, is not an ExternalName and has no selector are mirrored,
and not those labelled `endpointslice.kubernetes.io/skip-mirror: "true"` (the API server's
own `kubernetes` Endpoints) nor leader-election records. The subsets are repacked; each set of
ports and address family gets one slice of at most 1000 endpoints
(--mirroring-max-endpoints-per-subset): ready addresses with `ready: true`, not-ready ones with
`ready: false`, their hostname, node and target kept. A slice is named `<endpoints>-<random>`,
owned by the Endpoints, with its labels and annotations (less
`endpoints.kubernetes.io/last-change-trigger-time` and kubectl's last-applied configuration),
`kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
endpointslicemirroring-controller.k8s.io`. Slices no longer wanted (the Endpoints or Service
gone, a selector added) are deleted.
"""

from __future__ import annotations

import ipaddress

from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory, object_key
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.controllers.endpoints import ENDPOINTS, repack_subsets
from pinnace.controllers.endpointslice import (
    ENDPOINT_SLICES,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    PortsKey,
    ports_key,
    slice_port,
)
from pinnace.controllers.service_pods import SERVICES, TRIGGER_TIME_ANNOTATION, SliceWrites

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_ENDPOINTS_PER_SUBSET = 1000

SliceKey = tuple[PortsKey, str]
"""(the ports, the address type)."""


def should_mirror(endpoints: Object) -> bool:
    m = endpoints["metadata"]
    return (m.get("labels") or {}).get(SKIP_MIRROR_LABEL) != "true" and LEADER_ANNOTATION not in (
        m.get("annotations") or {}
    )


def _address_type(ip: str) -> str | None:
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except ValueError:
        return None


def _endpoint(address: Object, ready: bool) -> Object:
    """addressToEndpoint."""
    endpoint: Object = {"addresses": [address.get("ip", "")], "conditions": {"ready": ready}}
    if address.get("targetRef") is not None:
        endpoint["targetRef"] = address["targetRef"]
    if address.get("nodeName") is not None:
        endpoint["nodeName"] = address["nodeName"]
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    return endpoint


def desired_slices(endpoints: Object) -> dict[SliceKey, tuple[list[Object], list[Object]]]:
    """(ports, address type) -> (the ports, the endpoints), each subset's first 1000."""
    wanted: dict[SliceKey, tuple[list[Object], list[Object]]] = {}
    for subset in repack_subsets(endpoints.get("subsets") or []):
        ports = [slice_port(p, p.get("port", 0)) for p in subset.get("ports") or ()]
        added = 0
        for ready, field in ((True, "addresses"), (False, "notReadyAddresses")):
            for address in subset.get(field) or ():
                address_type = _address_type(str(address.get("ip", "")))
                if added >= MAX_ENDPOINTS_PER_SUBSET or address_type is None:
                    continue
                group = wanted.setdefault((ports_key(ports), address_type), (ports, []))
                group[1].append(_endpoint(address, ready))
                added += 1
    return wanted


def _mirrored_metadata(endpoints: Object) -> tuple[dict[str, str], dict[str, str]]:
    m = endpoints["metadata"]
    labels = {
        **(m.get("labels") or {}),
        SERVICE_NAME_LABEL: m["name"],
        MANAGED_BY_LABEL: CONTROLLER_NAME,
    }
    skipped = (TRIGGER_TIME_ANNOTATION, LAST_APPLIED_ANNOTATION)
    annotations = {k: v for k, v in (m.get("annotations") or {}).items() if k not in skipped}
    return labels, annotations


class EndpointSliceMirroringController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._services: Informer = informers.informer(SERVICES)
        self._endpoints: Informer = informers.informer(ENDPOINTS)
        self._slices: Informer = informers.informer(ENDPOINT_SLICES)
        self._writes = SliceWrites(self._slices)
        for informer in (self._services, self._endpoints):
            informer.add_event_handler(
                on_add=lambda o: self._queue.add(object_key(o)),
                on_update=lambda old, new: self._queue.add(object_key(new)),
                on_delete=lambda o: self._queue.add(object_key(o)),
            )
        self._slices.add_event_handler(
            on_add=self._slice_changed,
            on_update=lambda old, new: self._slice_changed(new),
            on_delete=self._slice_changed,
        )

    async def run(self) -> None:
        """Mirror Endpoints forever; cancel the task to stop."""
        for informer in (self._services, self._endpoints, self._slices):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    def _slice_changed(self, slice_: Object) -> None:
        labels = slice_["metadata"].get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME and labels.get(SERVICE_NAME_LABEL):
            namespace = slice_["metadata"].get("namespace", "")
            self._queue.add(f"{namespace}/{labels[SERVICE_NAME_LABEL]}")

    def _mirrored(self, namespace: str, name: str) -> list[Object]:
        return [
            s
            for s in self._slices.list(namespace)
            if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == name
            and (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME
        ]

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self._services.get(namespace, name)
        if service is None or (service.get("spec") or {}).get("type") == "ExternalName":
            self._writes.forget(key)
            return  # a deleted Service's slices go with their Endpoints (garbage collector)
        if not self._writes.caught_up(key, namespace):
            self._queue.add_rate_limited(key)
            return
        existing = self._mirrored(namespace, name)
        endpoints = self._endpoints.get(namespace, name)
        mirror = (
            endpoints is not None
            and (service.get("spec") or {}).get("selector") is None
            and should_mirror(endpoints)
        )
        if not mirror or endpoints is None:
            for s in existing:
                await self._delete(key, s)
            return
        await self._reconcile(key, endpoints, existing)

    async def _reconcile(self, key: str, endpoints: Object, existing: list[Object]) -> None:
        """One slice per (ports, address type): the first existing one rewritten when it
        differs, the others deleted (reconcileByPortMapping)."""
        labels, annotations = _mirrored_metadata(endpoints)
        by_key: dict[SliceKey, list[Object]] = {}
        for s in sorted(existing, key=lambda s: s["metadata"]["name"]):
            slice_key = (ports_key(s.get("ports") or []), str(s.get("addressType", "")))
            by_key.setdefault(slice_key, []).append(s)
        for slice_key, (ports, wanted) in desired_slices(endpoints).items():
            slices = by_key.pop(slice_key, [])
            for extra in slices[1:]:
                await self._delete(key, extra)
            current = slices[0] if slices else None
            new = self._slice(endpoints, ports, slice_key[1], wanted, labels, annotations, current)
            if current is None:
                namespace = new["metadata"]["namespace"]
                stored = await self._client.create(ENDPOINT_SLICES, namespace, new)
                self._writes.record(key, new, stored)
            elif new != current:
                self._writes.record(key, new, await self._client.update(ENDPOINT_SLICES, new))
        for leftover in by_key.values():
            for s in leftover:
                await self._delete(key, s)

    @staticmethod
    def _slice(
        endpoints: Object,
        ports: list[Object],
        address_type: str,
        wanted: list[Object],
        labels: dict[str, str],
        annotations: dict[str, str],
        current: Object | None,
    ) -> Object:
        m = endpoints["metadata"]
        metadata: Object = (
            dict(current["metadata"])
            if current is not None
            else {
                "generateName": f"{m['name']}-",
                "namespace": m.get("namespace", ""),
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Endpoints",
                        "name": m["name"],
                        "uid": m["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            }
        )
        metadata["labels"] = labels
        metadata.pop("annotations", None)
        if annotations:
            metadata["annotations"] = annotations
        base = current or {}
        return {
            **base,
            "metadata": metadata,
            "addressType": address_type,
            "endpoints": wanted,
            "ports": ports,
        }

    async def _delete(self, key: str, slice_: Object) -> None:
        m = slice_["metadata"]
        try:
            await self._client.delete(ENDPOINT_SLICES, m.get("namespace", ""), m["name"])
        except StatusError as e:
            if e.code != 404:
                raise
        self._writes.record(key, slice_, None)
