"""The static CPU manager: Guaranteed pods with whole CPUs get CPUs of their own, shown on the
pod; the shared pool on the node shrinks; a pod that cannot get its CPUs is refused as the
kubelet refuses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.kubelet.conftest import NODES, PODS, Node

from pinnace.kubelet import NodeConfig
from pinnace.kubelet.cpu_manager import (
    CPUSET_ANNOTATION,
    SHARED_CPUSET_ANNOTATION,
    format_cpuset,
    parse_cpuset,
    static_policy,
)

STATIC = NodeConfig(
    name="node-1",
    capacity={"cpu": "4", "memory": "8Gi", "pods": "10", "ephemeral-storage": "20Gi"},
    kube_reserved={"cpu": "500m"},
    system_reserved={"cpu": "300m"},  # 800m reserved: CPU 0 is kept for the system
    cpu_manager_policy="static",
)


def pod(name: str, cpu: str, memory: str = "100Mi", limits: bool = True) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}],
        },
    }


@pytest.fixture
def node() -> Iterator[Node]:
    n = Node(STATIC)
    yield n
    n.close()


def shared_pool(node: Node) -> str:
    return node.run(node.client.get(NODES, "", "node-1"))["metadata"]["annotations"][
        SHARED_CPUSET_ANNOTATION
    ]


def cpusets(node: Node, name: str) -> dict[str, str] | None:
    annotations = node.get_pod(name)["metadata"].get("annotations") or {}
    text = annotations.get(CPUSET_ANNOTATION)
    return None if text is None else json.loads(text)


def test_cpusets_are_read_and_written_in_the_linux_list_form() -> None:
    assert parse_cpuset("0-2,5, 7-8") == {0, 1, 2, 5, 7, 8}
    assert parse_cpuset("") == frozenset()
    assert format_cpuset({8, 0, 1, 2, 5, 7}) == "0-2,5,7-8"
    for bad in ("a", "3-1", "1-", "-1"):
        with pytest.raises(ValueError):
            parse_cpuset(bad)


def test_a_guaranteed_pod_with_whole_cpus_gets_its_own(node: Node) -> None:
    assert shared_pool(node) == "0-3"
    node.create_pod(pod("exclusive", "2"))
    node.create_pod(pod("fractional", "1500m"))
    node.create_pod(pod("burstable", "1", limits=False))
    node.settle()
    assert cpusets(node, "exclusive") == {"app": "1-2"}  # CPU 0 is reserved
    assert cpusets(node, "fractional") is None
    assert cpusets(node, "burstable") is None
    assert shared_pool(node) == "0,3"
    assert node.get_pod("exclusive")["status"]["phase"] == "Running"


def test_a_pod_that_cannot_get_its_cpus_is_rejected(node: Node) -> None:
    node.create_pod(pod("first", "2"))
    node.settle()
    node.create_pod(pod("second", "2"))  # one CPU left that is neither reserved nor given
    node.settle()
    status = node.get_pod("second")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "UnexpectedAdmissionError")
    assert status["message"] == (
        "Pod was rejected: Allocate failed due to not enough cpus available to satisfy "
        "request: requested=2, available=1, which is unexpected"
    )
    assert shared_pool(node) == "0,3"


def test_a_deleted_pods_cpus_return_to_the_shared_pool(node: Node) -> None:
    node.create_pod(pod("first", "3"))
    node.settle()
    assert shared_pool(node) == "0"
    node.run(node.client.delete(PODS, "default", "first"))
    node.settle(5)
    assert shared_pool(node) == "0-3"
    node.create_pod(pod("again", "3"))
    node.settle()
    assert cpusets(node, "again") == {"app": "1-3"}


def test_reserved_system_cpus_are_the_ones_kept_out_of_exclusive_use() -> None:
    config = NodeConfig(
        name="node-1",
        capacity={"cpu": "6"},
        system_reserved={"cpu": "2"},
        reserved_system_cpus=frozenset({0, 2}),
        cpu_manager_policy="static",
    )
    policy = static_policy(config)
    assert policy is not None
    guaranteed = pod("exclusive", "3")
    guaranteed["metadata"]["uid"] = "uid-1"
    assert policy.allocate(guaranteed).admit
    assert policy.assignments == {"uid-1": {"app": frozenset({1, 3, 4})}}
    assert format_cpuset(policy.shared_pool) == "0,2,5"
    assert policy.release("uid-1")
    assert format_cpuset(policy.shared_pool) == "0-5"
