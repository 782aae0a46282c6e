"""Small clusters and workloads for the planning tests, written as the files a user gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pinnace.plan import Snapshot, from_file


def pool(
    name: str,
    count: int,
    cpu: str = "4",
    memory: str = "16Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A node pool whose allocatable is its capacity (no eviction threshold kept back)."""
    found: dict[str, Any] = {
        "name": name,
        "count": count,
        "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
        "kubelet": {"evictionHard": {}},
    }
    if labels:
        found["labels"] = labels
    if taints:
        found["taints"] = taints
    return found


def cluster_file(tmp_path: Path, *pools: dict[str, Any], objects: list[Any] | None = None) -> Path:
    """A Cluster file of `pools`, or a Scenario with `objects` running on them."""
    if objects is None:
        doc: dict[str, Any] = {
            "apiVersion": "pinnace.dev/v1alpha1",
            "kind": "Cluster",
            "nodePools": list(pools),
        }
    else:
        doc = {
            "apiVersion": "sim.pinnace.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "plan"},
            "spec": {"cluster": {"nodePools": list(pools)}, "objects": objects},
        }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def snapshot(tmp_path: Path, *pools: dict[str, Any], objects: list[Any] | None = None) -> Snapshot:
    return from_file(cluster_file(tmp_path, *pools, objects=objects))


def container(cpu: str, memory: str = "256Mi") -> dict[str, Any]:
    return {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }


def deployment(name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container(cpu)], **spec},
            },
        },
    }


def job(name: str, parallelism: int, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container(cpu)]}},
        },
    }


def pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container(cpu)], **spec},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
