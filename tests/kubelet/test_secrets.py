"""Secrets in containers as the v1.32 kubelet gives them: env valueFrom.secretKeyRef, envFrom
secretRef and secret volumes, with the values decoded; a missing Secret or key is a
CreateContainerConfigError (or a FailedMount) with the kubelet's words until it appears, and
an optional reference to one that is missing is left out."""

from __future__ import annotations

import base64
from typing import Any

from tests.kubelet.conftest import Node, pod
from tests.kubelet.test_environment import printed
from tests.kubelet.test_volumes import failed_mounts

from pinnace.api import catalog

SECRETS = catalog.kind("", "secrets")


def secret(name: str, **data: str) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"metadata": {"name": name, "namespace": "default"}, "data": encoded}


def secret_pod(name: str, script: str, **container: Any) -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0].update(
        image="registry.k8s.io/busybox", command=["/bin/sh", "-c", script], **container
    )
    body["spec"]["restartPolicy"] = "Never"
    return body


def waiting(node: Node, name: str) -> dict[str, Any]:
    return node.get_pod(name)["status"]["containerStatuses"][0]["state"]["waiting"]


def test_env_and_env_from_take_decoded_secret_values(node: Node) -> None:
    node.run(node.client.create(SECRETS, "default", secret("creds", user="admin", pw="s3cr3t")))
    env = [
        {"name": "USER", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}},
        {
            "name": "NONE",
            "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": True}},
        },
    ]
    env_from = [{"secretRef": {"name": "creds"}, "prefix": "DB_"}]
    node.create_pod(
        secret_pod("env", 'echo "$USER $DB_pw [$NONE]"', env=env, envFrom=env_from)
    )
    node.settle()
    assert printed(node, "env") == ["admin s3cr3t []"]


def test_a_missing_secret_or_key_is_a_config_error_until_it_appears(node: Node) -> None:
    ref = {"secretKeyRef": {"name": "creds", "key": "token"}}
    node.create_pod(secret_pod("needs", "echo $TOKEN", env=[{"name": "TOKEN", "valueFrom": ref}]))
    node.settle()
    assert waiting(node, "needs") == {
        "reason": "CreateContainerConfigError",
        "message": 'secret "creds" not found',
    }
    node.run(node.client.create(SECRETS, "default", secret("creds", user="admin")))
    node.settle()
    assert waiting(node, "needs")["message"] == "couldn't find key token in Secret default/creds"
    node.run(node.client.delete(SECRETS, "default", "creds"))
    node.run(node.client.create(SECRETS, "default", secret("creds", token="abc")))
    node.settle()
    assert printed(node, "needs") == ["abc"]


def test_a_secret_volume_holds_a_file_per_key(node: Node) -> None:
    volume = {"name": "creds", "secret": {"secretName": "creds"}}
    mounts = [{"name": "creds", "mountPath": "/etc/creds", "readOnly": True}]
    body = secret_pod("files", "ls /etc/creds; cat /etc/creds/pw", volumeMounts=mounts)
    body["spec"]["volumes"] = [volume]
    node.create_pod(body)
    node.settle()
    assert failed_mounts(node) == [
        'MountVolume.SetUp failed for volume "creds" : secret "creds" not found'
    ]
    assert waiting(node, "files") == {"reason": "ContainerCreating"}
    node.run(node.client.create(SECRETS, "default", secret("creds", user="admin", pw="s3cr3t")))
    node.settle()
    assert printed(node, "files") == ["pw", "user", "s3cr3t"]


def test_a_missing_item_key_fails_the_mount_unless_optional(node: Node) -> None:
    node.run(node.client.create(SECRETS, "default", secret("creds", user="admin")))
    items = [{"key": "pw", "path": "password"}]
    body = secret_pod("items", "true", volumeMounts=[{"name": "v", "mountPath": "/etc/creds"}])
    body["spec"]["volumes"] = [{"name": "v", "secret": {"secretName": "creds", "items": items}}]
    node.create_pod(body)
    optional = secret_pod(
        "optional", "ls /etc/creds", volumeMounts=[{"name": "v", "mountPath": "/etc/creds"}]
    )
    optional["spec"]["volumes"] = [
        {"name": "v", "secret": {"secretName": "nowhere", "optional": True}}
    ]
    node.create_pod(optional)
    node.settle()
    assert failed_mounts(node) == [
        'MountVolume.SetUp failed for volume "v" : references non-existent secret key: pw'
    ]
    assert node.get_pod("optional")["status"]["phase"] == "Succeeded"
