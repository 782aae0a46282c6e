"""A node agent on the virtual clock beside an in-process API server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import EVENTS, Cluster
from tests.client.own_writes import Checked, checking

from pinnace.api.features import FeatureGates
from pinnace.api.objects import Object
from pinnace.kubelet import NodeAgent, NodeConfig
from pinnace.kubelet.agent import NODES, PODS
from pinnace.kubelet.node_lease import LEASES

__all__ = ["EVENTS", "LEASES", "NODES", "PODS", "Node", "pod"]

SETTLE = 1.0
"""Virtual seconds for informers and status writes to catch up."""


def pod(
    name: str, *, node: str = "", cpu: str = "", restart_policy: str = "", **annotations: str
) -> dict[str, Any]:
    """A pod of one container `app`; keyword annotations are the behaviour model's
    (run_seconds="5" is sim.pinnace.dev/run-seconds: "5")."""
    container: dict[str, Any] = {"name": "app", "image": "nginx:1.27"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {
                f"sim.pinnace.dev/{k.replace('_', '-')}": v for k, v in annotations.items()
            },
        },
        "spec": spec,
    }


class Node(Cluster):
    """A cluster with one running node agent, `node-1` (2 CPUs unless told)."""

    def __init__(self, config: NodeConfig, features: FeatureGates | None = None) -> None:
        super().__init__()
        if features is not None:
            self.server.features = features
        self.agent = NodeAgent(self.client, config, features=features)
        self.server.log_source = self.agent.read_log
        self.task = self.loop.create_task(self.agent.run())
        self.settle()

    def settle(self, seconds: float = SETTLE) -> None:
        self.run(asyncio.sleep(seconds))

    def get_pod(self, name: str) -> Object:
        return self.run(self.client.get(PODS, "default", name))

    def create_pod(self, body: dict[str, Any]) -> Object:
        return self.run(self.client.create(PODS, "default", body))


CONFIG = NodeConfig(
    name="node-1",
    capacity={"cpu": "2", "memory": "4Gi", "pods": "10", "ephemeral-storage": "20Gi"},
    kube_reserved={"memory": "256Mi"},
    system_reserved={"cpu": "0"},
)


@pytest.fixture
def node() -> Iterator[Node]:
    n = Node(CONFIG)
    yield n
    n.close()


@pytest.fixture(autouse=True)
def own_writes_decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """Every own write of these tests' agents (a pod's status, its Events and tokens) is also
    decoded, and must be stored as decoding would store it: the crash loops, probes, volumes,
    evictions, resizes and restarts here are the statuses the kubelet builds."""
    yield from checking(monkeypatch)
