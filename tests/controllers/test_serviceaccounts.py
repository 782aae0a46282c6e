"""Service accounts as a v1.32 cluster has them, on the virtual clock: the ServiceAccount
controller's `default` in every namespace, the root CA publisher's kube-root-ca.crt, and the
ServiceAccount admission plugin's defaulting, refusal and kube-api-access volume, whose files
a container reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.clock import Randomness
from pinnace.cluster import ClusterOptions
from pinnace.controllers.rootcacertpublisher import DESCRIPTION, self_signed_ca
from pinnace.kubelet import node_configs

NAMESPACES = catalog.kind("", "namespaces")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
CONFIG_MAPS = catalog.kind("", "configmaps")
PODS = catalog.kind("", "pods")
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=5, root_ca=CA))
    yield c
    c.close()


def names(cluster: SimulatedCluster, kind: Any, name: str) -> list[str]:
    items = cluster.run(cluster.client.list(kind, ""))["items"]
    return sorted(i["metadata"]["namespace"] for i in items if i["metadata"]["name"] == name)


def pod(name: str, script: str = "true", **spec: Any) -> Object:
    container = {"name": "app", "image": "busybox", "command": ["sh", "-c", script]}
    return {
        "metadata": {"name": name},
        "spec": {"containers": [container], "restartPolicy": "Never", **spec},
    }


def test_every_namespace_gets_a_default_account_and_the_root_ca_again_and_again(
    cluster: SimulatedCluster,
) -> None:
    system = ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert names(cluster, SERVICE_ACCOUNTS, "default") == system
    assert names(cluster, CONFIG_MAPS, "kube-root-ca.crt") == system
    cluster.run(cluster.client.create(NAMESPACES, "", {"metadata": {"name": "team"}}))
    cluster.wait(1)
    assert "team" in names(cluster, SERVICE_ACCOUNTS, "default")
    cm = cluster.run(cluster.client.get(CONFIG_MAPS, "team", "kube-root-ca.crt"))
    assert cm["data"] == {"ca.crt": CA}
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}

    cluster.run(cluster.client.delete(SERVICE_ACCOUNTS, "team", "default"))
    cluster.run(cluster.client.update(CONFIG_MAPS, {**cm, "data": {"ca.crt": "tampered"}}))
    cluster.wait(1)
    assert "team" in names(cluster, SERVICE_ACCOUNTS, "default")
    assert cluster.run(cluster.client.get(CONFIG_MAPS, "team", "kube-root-ca.crt"))["data"] == {
        "ca.crt": CA
    }
    cluster.run(cluster.client.delete(CONFIG_MAPS, "team", "kube-root-ca.crt"))
    cluster.wait(1)
    assert "team" in names(cluster, CONFIG_MAPS, "kube-root-ca.crt")


def test_a_pod_runs_as_default_with_the_token_volume_mounted_in_every_container(
    cluster: SimulatedCluster,
) -> None:
    script = f"cat {TOKEN_DIR}/namespace {TOKEN_DIR}/ca.crt; ls {TOKEN_DIR}"
    body = pod(
        "reader", script, initContainers=[{"name": "init", "image": "busybox", "command": ["true"]}]
    )
    created = cluster.run(cluster.client.create(PODS, "default", body))
    spec = created["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert [s for source in volume["projected"]["sources"] for s in source] == [
        "serviceAccountToken",
        "configMap",
        "downwardAPI",
    ]
    mount = {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_DIR}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]
    cluster.wait(10)
    got = cluster.run(cluster.client.get(PODS, "default", "reader"))
    assert got["status"]["phase"] == "Succeeded"
    [agent] = cluster.plane.nodes.agents.values()
    run = agent.workers[got["metadata"]["uid"]].container_log("app", previous=False)
    assert run is not None
    assert [line for _, line in run.log] == [
        "default-----BEGIN CERTIFICATE-----",
        "MIIB",
        "-----END CERTIFICATE-----",
        "ca.crt",
        "namespace",
        "token",
    ]


PROJECTION = {
    "defaultMode": 0o644,
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {
            "downwardAPI": {
                "items": [
                    {
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }
                ]
            }
        },
    ],
}


def test_every_pods_token_volume_projects_the_same_whatever_another_pods_writes_do(
    cluster: SimulatedCluster,
) -> None:
    first = cluster.run(cluster.client.create(PODS, "default", pod("first", "sleep 60")))
    cluster.run(cluster.client.create(PODS, "default", pod("second", "sleep 60")))
    cluster.wait(2)  # both running: their kubelet has written their status
    first = cluster.run(cluster.client.get(PODS, "default", "first"))
    first["metadata"]["labels"] = {"app": "replaced"}
    cluster.run(cluster.client.update(PODS, first))
    patch = {"metadata": {"annotations": {"a": "b"}}}
    cluster.run(cluster.client.patch(PODS, "default", "first", patch))
    for name in ("first", "second"):
        got = cluster.run(cluster.client.get(PODS, "default", name))
        [volume] = got["spec"]["volumes"]
        assert volume["projected"] == PROJECTION
        assert got["status"]["phase"] == "Running"


def test_automount_follows_the_pod_then_the_account_and_a_mount_at_the_path_wins(
    cluster: SimulatedCluster,
) -> None:
    account = {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    cluster.run(cluster.client.create(SERVICE_ACCOUNTS, "default", account))
    quiet = cluster.run(
        cluster.client.create(PODS, "default", pod("q", serviceAccountName="quiet"))
    )
    assert "volumes" not in quiet["spec"]
    body = pod("loud", serviceAccountName="quiet", automountServiceAccountToken=True)
    assert cluster.run(cluster.client.create(PODS, "default", body))["spec"]["volumes"]
    body = pod("off", automountServiceAccountToken=False)
    assert "volumes" not in cluster.run(cluster.client.create(PODS, "default", body))["spec"]
    own = pod("own", volumes=[{"name": "mine", "emptyDir": {}}])
    own["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": TOKEN_DIR}]
    created = cluster.run(cluster.client.create(PODS, "default", own))
    assert [v["name"] for v in created["spec"]["volumes"]] == ["mine"]


def test_a_pod_naming_a_missing_account_is_forbidden(cluster: SimulatedCluster) -> None:
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.create(PODS, "default", pod("p", serviceAccountName="nope")))
    assert e.value.code == 403
    assert e.value.message == (
        'pods "p" is forbidden: error looking up service account default/nope: '
        'serviceaccount "nope" not found'
    )


def test_the_generated_ca_is_a_pem_the_same_for_the_same_seed() -> None:
    first = self_signed_ca(Randomness(1), 1_700_000_000)
    assert first.startswith("-----BEGIN CERTIFICATE-----\n")
    assert first == self_signed_ca(Randomness(1), 1_700_000_000)
    assert first != self_signed_ca(Randomness(2), 1_700_000_000)


def test_a_pod_created_with_its_namespace_waits_for_the_default_account(
    cluster: SimulatedCluster,
) -> None:
    async def namespace_then_pod() -> Object:
        await cluster.client.create(NAMESPACES, "", {"metadata": {"name": "fresh"}})
        return await cluster.client.create(PODS, "fresh", pod("first"))

    assert cluster.run(namespace_then_pod())["spec"]["serviceAccountName"] == "default"
