"""A synthetic cluster for measuring `pinnace plan`: a Scenario file of NODES nodes (by default
16 CPUs, 64Gi, 110 pods) running ten Deployments of PODS pods in all, of ten shapes (100m to 1500m
CPU), so `plan headroom`, `plan failure` and the others can be timed at the size issue 17
names (1,000 nodes, 20,000 running pods; `plan nodes` on 5,000).

    python scripts/plan_cluster.py OUT.yaml [--nodes 1000] [--pods 20000] [--cpu 16 --memory 64Gi]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

SHAPES = (
    # (cpu, memory) of each Deployment's pods
    ("100m", "128Mi"),
    ("200m", "256Mi"),
    ("250m", "512Mi"),
    ("300m", "384Mi"),
    ("400m", "1Gi"),
    ("500m", "768Mi"),
    ("600m", "1Gi"),
    ("750m", "2Gi"),
    ("1", "2Gi"),
    ("1500m", "3Gi"),
)


def scenario(nodes: int, pods: int, cpu: str = "16", memory: str = "64Gi") -> dict[str, Any]:
    pool = {
        "name": "general",
        "count": nodes,
        "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
    }
    replicas = [pods // len(SHAPES) + (i < pods % len(SHAPES)) for i in range(len(SHAPES))]
    objects = [_deployment(f"app-{i}", n, *SHAPES[i]) for i, n in enumerate(replicas)]
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "plan-bench"},
        "spec": {"cluster": {"nodePools": [pool]}, "objects": objects},
    }


def _deployment(name: str, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--cpu", default="16", help="each node's CPUs")
    parser.add_argument("--memory", default="64Gi", help="each node's memory")
    args = parser.parse_args()
    doc = scenario(args.nodes, args.pods, args.cpu, args.memory)
    args.out.write_text(yaml.safe_dump(doc, sort_keys=False))


if __name__ == "__main__":
    main()
