"""A cluster for the workload controllers' tests: an in-process API server on the virtual
clock, simulated nodes, the scheduler, and the workload controllers `pinnace up` runs."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.client.conftest import EVENTS, Cluster

from pinnace.api import catalog
from pinnace.apiserver.objects import Object
from pinnace.clock import Randomness
from pinnace.controllers.replicaset import PODS, REPLICA_SETS
from pinnace.controllers.workloads import WorkloadControllers
from pinnace.kubelet import NodeAgentPool, node_configs
from pinnace.scheduler.adapter import SchedulerService

__all__ = ["DEPLOYMENTS", "EVENTS", "PODS", "REPLICA_SETS", "Workloads", "template"]

DEPLOYMENTS = catalog.kind("apps", "deployments")


def template(image: str = "nginx:1.27", **labels: str) -> Object:
    return {
        "metadata": {"labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": image}]},
    }


class Workloads(Cluster):
    """`nodes` simulated nodes (none: pods stay Pending unless a test binds them), the
    scheduler when there are nodes, and the controllers."""

    def __init__(self, nodes: int = 2) -> None:
        super().__init__()
        self.tasks: list[asyncio.Task[Any]] = []
        self.pool = NodeAgentPool(self.client, node_configs(nodes, {"cpu": "4", "pods": "20"}))
        self.run(self.pool.start())
        if nodes:
            service = SchedulerService(self.client, None, Randomness(3))
            self.tasks.append(self.loop.create_task(service.run()))
        self.controllers = WorkloadControllers(self.client)
        self.run(self.controllers.start())
        self.settle()

    def settle(self, seconds: float = 2.0) -> None:
        self.run(asyncio.sleep(seconds))

    def pods(self, **labels: str) -> list[Object]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return self.run(self.client.list(PODS, "default", label_selector=selector))["items"]

    def get(self, kind: Any, name: str) -> Object:
        return self.run(self.client.get(kind, "default", name))

    def events(self, reason: str) -> list[str]:
        items = self.run(self.client.list(EVENTS, "default"))["items"]
        return sorted(e["message"] for e in items if e["reason"] == reason)

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.run(self.controllers.stop())
        self.run(self.pool.stop())
        self.close()
