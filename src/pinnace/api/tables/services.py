"""Services, Endpoints and EndpointSlices (printService, printEndpoints, printEndpointSlice
in kubernetes/pkg/printers/internalversion/printers.go, v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    integer,
    items,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import format_labels

_MAX_SHOWN = 3


def _with_more(shown: list[str], count: int, empty: str) -> str:
    text = ",".join(shown)
    if count > len(shown):
        return f"{text} + {count - len(shown)} more..."
    return text or empty


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _load_balancer_ips(svc: Object) -> str:
    ingress = items(svc, "status", "loadBalancer", "ingress")
    # kube-apiserver prints the wide form, where the list is never cut short.
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ingress)


def _external_ip(svc: Object) -> str:
    spec = section(svc, "spec")
    external = _strings(spec.get("externalIPs"))
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        balancers = _load_balancer_ips(svc)
        shown = [*([balancers] if balancers else []), *external]
        return ",".join(shown) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def port_string(ports: list[Object]) -> str:
    """`80/TCP`, or `80:30080/TCP` with a node port, comma-separated (makePortString)."""
    pieces = []
    for port in ports:
        number, protocol = integer(port.get("port")), port.get("protocol") or ""
        node_port = integer(port.get("nodePort"))
        pieces.append(
            f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}"
        )
    return ",".join(pieces)


def _service_row(svc: Object, now: float) -> Row:
    spec = section(svc, "spec")
    cluster_ips = _strings(spec.get("clusterIPs"))
    return Row(
        [
            name_of(svc),
            str(spec.get("type") or ""),
            cluster_ips[0] if cluster_ips else "<none>",
            _external_ip(svc),
            port_string(items(svc, "spec", "ports")) or "<none>",
            age_of(svc, now),
            format_labels(spec.get("selector")),
        ]
    )


SERVICES = Printer(
    (
        name_column(),
        Column("Type", "string", doc("V1ServiceSpec", "type")),
        Column("Cluster-IP", "string", doc("V1ServiceSpec", "clusterIP")),
        Column("External-IP", "string", doc("V1ServiceSpec", "externalIPs")),
        Column("Port(s)", "string", doc("V1ServiceSpec", "ports")),
        age_column(),
        Column("Selector", "string", doc("V1ServiceSpec", "selector"), 1),
    ),
    _service_row,
)


def endpoints_string(endpoints: Object) -> str:
    """Ready addresses with each port, at most three and a count of the rest
    (formatEndpoints); a subset without ports lists its addresses alone."""
    shown: list[str] = []
    count = 0
    for subset in items(endpoints, "subsets"):
        addresses = [str(a.get("ip", "")) for a in items(subset, "addresses")]
        ports = items(subset, "ports")
        if not ports:
            count += len(addresses)
            shown += addresses[: _MAX_SHOWN - len(shown)]
            continue
        for port in ports:
            count += len(addresses)
            number = integer(port.get("port"))
            for ip in addresses[: _MAX_SHOWN - len(shown)]:
                shown.append(f"[{ip}]:{number}" if ":" in ip else f"{ip}:{number}")
    if not items(endpoints, "subsets"):
        return "<none>"
    return _with_more(shown, count, "")


ENDPOINTS = Printer(
    (
        name_column(),
        Column("Endpoints", "string", doc("V1Endpoints", "subsets")),
        age_column(),
    ),
    lambda ep, now: Row([name_of(ep), endpoints_string(ep), age_of(ep, now)]),
)


def _slice_ports(slice_: Object) -> str:
    ports = items(slice_, "ports")
    shown = []
    for port in ports[:_MAX_SHOWN]:
        if port.get("port") is not None:
            shown.append(str(port["port"]))
        elif port.get("name") is not None:
            shown.append(str(port["name"]))
        else:
            shown.append("*")
    return _with_more(shown, len(ports), "<unset>")


def _slice_endpoints(slice_: Object) -> str:
    addresses = [a for e in items(slice_, "endpoints") for a in _strings(e.get("addresses"))]
    return _with_more(addresses[:_MAX_SHOWN], len(addresses), "<unset>")


ENDPOINT_SLICES = Printer(
    (
        name_column(),
        Column("AddressType", "string", doc("V1EndpointSlice", "addressType")),
        Column("Ports", "string", doc("V1EndpointSlice", "ports")),
        Column("Endpoints", "string", doc("V1EndpointSlice", "endpoints")),
        age_column(),
    ),
    lambda es, now: Row(
        [
            name_of(es),
            str(es.get("addressType") or ""),
            _slice_ports(es),
            _slice_endpoints(es),
            age_of(es, now),
        ]
    ),
)
