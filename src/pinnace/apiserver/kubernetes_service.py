"""The `kubernetes` Service in `default` and its endpoints, as kube-apiserver v1.32 keeps them
(pkg/controlplane/controller/kubernetesservice and pkg/controlplane/reconcilers): the
Service has the first address of the service CIDR and port 443 (`https`) to the API server's
secure port; its Endpoints and EndpointSlice, both named `kubernetes`, list the API server's
advertised address. They are made at start and put right when the port or address changed
(a restart on another `--port`). The Endpoints carry `endpointslice.kubernetes.io/
skip-mirror`, since the API server writes the EndpointSlice itself.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

NAME = "kubernetes"
NAMESPACE = "default"
SERVICE_PORT = 443
PORT_NAME = "https"
SERVICE_LABELS = {"component": "apiserver", "provider": "kubernetes"}
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"


def _service(server: APIServer) -> Object:
    network = server.services.network
    first = server.services.ips.first()
    return {
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(SERVICE_LABELS)},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": first,
            "clusterIPs": [first],
            "sessionAffinity": "None",
            "ports": [
                {
                    "name": PORT_NAME,
                    "port": SERVICE_PORT,
                    "protocol": "TCP",
                    "targetPort": network.secure_port,
                }
            ],
        },
    }


def _endpoints(server: APIServer) -> Object:
    network = server.services.network
    return {
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {SKIP_MIRROR_LABEL: "true"},
        },
        "subsets": [
            {
                "addresses": [{"ip": network.advertise_address}],
                "ports": [{"name": PORT_NAME, "port": network.secure_port, "protocol": "TCP"}],
            }
        ],
    }


def _endpoint_slice(server: APIServer) -> Object:
    network = server.services.network
    family = ipaddress.ip_address(network.advertise_address).version
    return {
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {SERVICE_NAME_LABEL: NAME},
        },
        "addressType": "IPv6" if family == 6 else "IPv4",
        "endpoints": [{"addresses": [network.advertise_address], "conditions": {"ready": True}}],
        "ports": [{"name": PORT_NAME, "port": network.secure_port, "protocol": "TCP"}],
    }


async def reconcile(server: APIServer) -> None:
    """Create the Service, Endpoints and EndpointSlice, or bring their ports and addresses
    up to date."""
    await _ensure(server, "", "services", _service(server), (("spec", "ports"),))
    await _ensure(server, "", "endpoints", _endpoints(server), (("subsets",),))
    paths = (("endpoints",), ("ports",))
    await _ensure(server, "discovery.k8s.io", "endpointslices", _endpoint_slice(server), paths)


async def _ensure(
    server: APIServer, group: str, plural: str, wanted: Object, paths: tuple[tuple[str, ...], ...]
) -> None:
    kind = catalog.kind(group, plural)
    try:
        await server.get(kind, NAMESPACE, NAME)
    except StatusError as e:
        if e.code != 404:
            raise
        # As the reconciler: create only what it does not find (the Service's address is
        # allocated as it is created, so a second create would be refused, not a conflict).
        await server.create(kind, NAMESPACE, wanted)
        return

    def put_right(current: Object) -> Object:
        for path in paths:
            target, source = current, wanted
            for key in path[:-1]:
                target, source = target.setdefault(key, {}), source[key]
            target[path[-1]] = source[path[-1]]
        return current

    await server.modify(kind, NAMESPACE, NAME, put_right)
