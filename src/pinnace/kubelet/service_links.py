"""The environment variables a container gets for Services, as the v1.32 kubelet makes them
(getServiceEnvVarMap in pkg/kubelet/kubelet_pods.go, pkg/kubelet/envvars).

Every container gets the `kubernetes` Service's of `default`; with the pod's
`enableServiceLinks` (true by default) it also gets those of every Service of its own
namespace that exists when the container starts, a headless one (clusterIP None) excepted.
For a Service `my-db` with cluster IP 10.96.0.20 and ports 5432 (first) and 9187/metrics:

    MY_DB_SERVICE_HOST=10.96.0.20            MY_DB_PORT=tcp://10.96.0.20:5432
    MY_DB_SERVICE_PORT=5432                  MY_DB_PORT_5432_TCP=tcp://10.96.0.20:5432
    MY_DB_SERVICE_PORT_METRICS=9187          MY_DB_PORT_5432_TCP_PROTO=tcp
                                             MY_DB_PORT_5432_TCP_PORT=5432
                                             MY_DB_PORT_5432_TCP_ADDR=10.96.0.20
                                             (and the same four for 9187)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

ServiceLookup = Callable[[str], Sequence[Mapping[str, Any]]]
"""namespace -> the Services in it, as the node's informer has them."""
MASTER_SERVICES = ("kubernetes",)


def no_services(namespace: str) -> Sequence[Mapping[str, Any]]:
    return ()


def _ip_set(service: Mapping[str, Any]) -> bool:
    return (service.get("spec") or {}).get("clusterIP") not in (None, "", "None")


def service_environment(pod: Mapping[str, Any], services: ServiceLookup) -> dict[str, str]:
    """The Service variables of the pod's containers."""
    namespace = pod["metadata"].get("namespace", "")
    links = (pod.get("spec") or {}).get("enableServiceLinks") is not False
    chosen: dict[str, Mapping[str, Any]] = {}
    for service in services("default"):
        name = service["metadata"]["name"]
        if name in MASTER_SERVICES and _ip_set(service):
            chosen[name] = service
    if links:
        for service in services(namespace):
            if _ip_set(service):
                chosen[service["metadata"]["name"]] = service
    variables: dict[str, str] = {}
    for name in sorted(chosen):
        variables.update(from_service(chosen[name]))
    return variables


def _variable_name(text: str) -> str:
    return text.replace("-", "_").upper()


def from_service(service: Mapping[str, Any]) -> dict[str, str]:
    """envvars.FromServices for one Service."""
    spec = service.get("spec") or {}
    ip = spec["clusterIP"]
    ports = [p for p in spec.get("ports") or () if isinstance(p, Mapping)]
    prefix = _variable_name(service["metadata"]["name"])
    variables = {f"{prefix}_SERVICE_HOST": ip}
    if not ports:
        return variables
    variables[f"{prefix}_SERVICE_PORT"] = str(ports[0].get("port", 0))
    for port in ports:
        if port.get("name"):
            name = f"{prefix}_SERVICE_PORT_{_variable_name(port['name'])}"
            variables[name] = str(port.get("port", 0))
    host = f"[{ip}]" if ":" in ip else ip
    for i, port in enumerate(ports):
        protocol = str(port.get("protocol") or "TCP")
        number = port.get("port", 0)
        url = f"{protocol.lower()}://{host}:{number}"
        if i == 0:
            variables[f"{prefix}_PORT"] = url
        port_prefix = f"{prefix}_PORT_{number}_{protocol.upper()}"
        variables[port_prefix] = url
        variables[f"{port_prefix}_PROTO"] = protocol.lower()
        variables[f"{port_prefix}_PORT"] = str(number)
        variables[f"{port_prefix}_ADDR"] = ip
    return variables
