"""Host ports: the ports a pod binds on its node (GetHostPorts) and when two of them conflict
(HostPortInfo.CheckConflict, pkg/scheduler/framework/types.go): a port bound on 0.0.0.0
conflicts with the same protocol and port on any IP; one on a specific IP conflicts with that
IP and with 0.0.0.0."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node: (protocol, host IP, port) with defaults applied."""

    protocol: str
    ip: str
    port: int


def pod_host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """GetHostPorts: app containers' and sidecars' ports with a hostPort."""
    containers = spec.get("containers") or []
    init = spec.get("initContainers")
    if init:
        containers = [c for c in init if c.get("restartPolicy") == "Always"] + containers
    for c in containers:  # a loop, not any(): the scheduler reads every pod's
        if c.get("ports"):
            break
    else:
        return ()
    return tuple(
        HostPort(
            protocol=p.get("protocol") or "TCP",
            ip=p.get("hostIP") or DEFAULT_BIND_ALL_HOST_IP,
            port=int(p["hostPort"]),
        )
        for c in containers
        for p in c.get("ports") or ()
        if int(p.get("hostPort") or 0) > 0
    )


def conflicts(wanted: HostPort, used: Mapping[HostPort, int]) -> bool:
    """Whether `wanted` conflicts with a port in use on the node."""
    for port in used:
        if port.protocol != wanted.protocol or port.port != wanted.port:
            continue
        if DEFAULT_BIND_ALL_HOST_IP in (wanted.ip, port.ip) or wanted.ip == port.ip:
            return True
    return False
