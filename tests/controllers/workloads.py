"""A cluster for the workload controllers' tests: the control plane `pinnace up` runs, on the
virtual clock, with simulated nodes and (when there are nodes) the scheduler."""

from __future__ import annotations

from typing import Any

from tests.client.conftest import EVENTS
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.cluster import ClusterOptions
from pinnace.controllers.replicaset import PODS, REPLICA_SETS
from pinnace.controllers.workloads import WorkloadControllers
from pinnace.kubelet import node_configs
from pinnace.scheduler.config import SchedulerConfiguration

__all__ = ["DEPLOYMENTS", "EVENTS", "PODS", "REPLICA_SETS", "Workloads", "template"]

DEPLOYMENTS = catalog.kind("apps", "deployments")

NODE_SHAPE = {"cpu": "4", "pods": "20"}


def template(image: str = "nginx:1.27", **labels: str) -> Object:
    return {
        "metadata": {"labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": image}]},
    }


class Workloads(SimulatedCluster):
    """`nodes` simulated nodes of `shape` (none: pods stay Pending unless a test binds them),
    the scheduler when there are nodes, and the controllers; in the simulated mode with
    `simulated` (`ClusterOptions.simulated`), for tests that let days pass."""

    def __init__(
        self,
        nodes: int = 2,
        shape: dict[str, str] | None = None,
        scheduler_config: SchedulerConfiguration | None = None,
        simulated: bool = False,
    ) -> None:
        super().__init__(
            ClusterOptions(
                nodes=node_configs(nodes, shape or NODE_SHAPE),
                scheduler=nodes > 0,
                scheduler_config=scheduler_config,
                seed=3,
                simulated=simulated,
            )
        )
        assert self.plane.workloads is not None
        self.controllers: WorkloadControllers = self.plane.workloads
        self.settle()

    def settle(self, seconds: float = 2.0) -> None:
        self.wait(seconds)

    def pods(self, **labels: str) -> list[Object]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return self.run(self.client.list(PODS, "default", label_selector=selector))["items"]

    def get(self, kind: Any, name: str) -> Object:
        return self.run(self.client.get(kind, "default", name))

    def events(self, reason: str) -> list[str]:
        items = self.run(self.client.list(EVENTS, "default"))["items"]
        return sorted(e["message"] for e in items if e["reason"] == reason)

    def close(self) -> None:
        if self.controllers is not self.plane.workloads:  # a test replaced them
            self.run(self.controllers.stop())
        super().close()
