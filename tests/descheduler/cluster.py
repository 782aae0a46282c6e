"""A cluster for the descheduler's tests on the virtual clock: three simulated nodes of 4 CPU,
the scheduler scoring MostAllocated (as HighNodeUtilization wants), and the workload and
disruption controllers."""

from __future__ import annotations

from typing import Any

from tests.client.conftest import NODES
from tests.controllers.workloads import DEPLOYMENTS, PODS, Workloads

from pinnace.api.objects import Object
from pinnace.descheduler.policy import parse
from pinnace.descheduler.runner import CycleResult, Descheduler
from pinnace.scheduler.config import parse as parse_scheduler_config

__all__ = ["DEPLOYMENTS", "NODES", "PODS", "Descheduled", "deployment", "pod"]

MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""


def pod(name: str, cpu: str = "1", **spec: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu}}}
            ],
            **spec,
        },
    }


def deployment(name: str, replicas: int, cpu: str = "1") -> Object:
    template = pod(name, cpu)
    del template["apiVersion"], template["kind"], template["metadata"]["name"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        },
    }


class Descheduled(Workloads):
    def __init__(self, nodes: int = 3) -> None:
        super().__init__(
            nodes,
            shape={"cpu": "4", "memory": "8Gi", "pods": "20"},
            scheduler_config=parse_scheduler_config(MOST_ALLOCATED),
        )

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.run(self.client.list(NODES, ""))["items"]]

    def cordon(self, *names: str, unschedulable: bool = True) -> None:
        for name in names:
            patch = {"spec": {"unschedulable": unschedulable or None}}
            self.run(self.client.patch(NODES, "", name, patch))

    def create(self, kind: Any, obj: Object) -> Object:
        return self.run(self.client.create(kind, "default", obj))

    def placement(self) -> dict[str, list[str]]:
        """Node name -> the names of the running pods there."""
        placed: dict[str, list[str]] = {n: [] for n in self.node_names}
        for p in self.run(self.client.list(PODS, "default"))["items"]:
            node = p["spec"].get("nodeName")
            if node and not p["metadata"].get("deletionTimestamp"):
                placed[node].append(p["metadata"]["name"])
        return placed

    def deschedule(self, policy: str, dry_run: bool = False) -> CycleResult:
        return self.run(Descheduler(self.client, parse(policy), dry_run).run_once())
