"""Scenarios for the research environment's tests: small, on the virtual clock."""

from __future__ import annotations

from typing import Any

import numpy as np

ZONE = "topology.kubernetes.io/zone"


def pod_template(
    cpu: str, memory: str, *, node_selector: dict[str, str] | None = None, tolerate: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "app",
                "image": "app:1",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerate:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec}


def scenario(
    pools: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    *,
    until: str = "10m",
    objects: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "gym-test"},
        "spec": {
            "until": until,
            "cluster": {"nodePools": pools},
            "objects": objects or [],
            "workloads": workloads,
            "metrics": {"interval": "1m"},
        },
    }


def random_cluster(seed: int) -> dict[str, Any]:
    """Pools of random sizes, zones and taints; pods of random requests, some selecting a
    zone, some tolerating the taint: enough arrive to fill nodes, so Filter rejects some."""
    rng = np.random.default_rng(seed)
    zones = ["a", "b", "c"]
    pools = []
    for i in range(int(rng.integers(2, 5))):
        pool: dict[str, Any] = {
            "name": f"pool{i}",
            "count": int(rng.integers(1, 4)),
            "capacity": {
                "cpu": str(int(rng.integers(1, 5))),
                "memory": f"{int(rng.integers(2, 9))}Gi",
            },
            "labels": {ZONE: str(rng.choice(zones))},
        }
        if rng.random() < 0.3:
            pool["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        pools.append(pool)
    workloads = []
    for i in range(3):
        selector = {ZONE: str(rng.choice(zones))} if rng.random() < 0.4 else None
        template = pod_template(
            f"{int(rng.integers(1, 16)) * 100}m",
            f"{int(rng.integers(1, 8)) * 256}Mi",
            node_selector=selector,
            tolerate=bool(rng.random() < 0.5),
        )
        workloads.append(
            {
                "name": f"w{i}",
                "template": template,
                "arrivals": {"poisson": {"ratePerMinute": 4}},
                "runTime": {"exponential": {"mean": "8m"}},
            }
        )
    return scenario(pools, workloads, until="6m")
