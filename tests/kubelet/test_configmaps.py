"""Containers that take their environment from ConfigMaps wait with
CreateContainerConfigError until what they need exists, then start."""

from __future__ import annotations

from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import Node, pod

from pinnace.client import PatchType


def waiting(node: Node, name: str) -> dict:
    return node.get_pod(name)["status"]["containerStatuses"][0]["state"].get("waiting", {})


def test_a_missing_config_map_or_key_waits_until_it_appears(node: Node) -> None:
    body = pod("app", node="node-1")
    body["spec"]["containers"][0]["env"] = [
        {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}}
    ]
    node.create_pod(body)
    node.settle()
    assert waiting(node, "app") == {
        "reason": "CreateContainerConfigError",
        "message": 'configmap "settings" not found',
    }
    assert node.get_pod("app")["status"]["phase"] == "Pending"

    node.run(node.client.create(CONFIG_MAPS, "default", config_map("settings", mode="fast")))
    node.settle()
    assert waiting(node, "app")["message"] == (
        "couldn't find key level in ConfigMap default/settings"
    )

    patch = {"data": {"level": "debug"}}
    node.run(node.client.patch(CONFIG_MAPS, "default", "settings", patch, PatchType.MERGE))
    node.settle()
    status = node.get_pod("app")["status"]
    assert status["phase"] == "Running"
    assert list(status["containerStatuses"][0]["state"]) == ["running"]


def test_optional_references_and_env_from(node: Node) -> None:
    body = pod("relaxed", node="node-1")
    body["spec"]["containers"][0]["env"] = [
        {
            "name": "LEVEL",
            "valueFrom": {"configMapKeyRef": {"name": "nowhere", "key": "level", "optional": True}},
        }
    ]
    body["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "absent", "optional": True}}
    ]
    node.create_pod(body)
    strict = pod("strict", node="node-1")
    strict["spec"]["containers"][0]["envFrom"] = [
        {"prefix": "APP_", "configMapRef": {"name": "absent"}}
    ]
    node.create_pod(strict)
    node.settle()
    assert node.get_pod("relaxed")["status"]["phase"] == "Running"
    assert waiting(node, "strict")["message"] == 'configmap "absent" not found'
