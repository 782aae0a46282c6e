"""The StatefulSet controller's claims on the virtual clock: volumeClaimTemplates become
claims before their pods and persistentVolumeClaimRetentionPolicy decides who owns them
(stateful_pod_control.go v1.32, StatefulSetAutoDeletePVC)."""

from __future__ import annotations

from tests.controllers.test_persistentvolume import CLASSES, PVCS, create, storage_class
from tests.controllers.workloads import Workloads

from pinnace.api import catalog
from pinnace.api.objects import Object, clone


def web(replicas: int, **policy: str) -> Object:
    return {
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "nginx",
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "nginx"}},
            "persistentVolumeClaimRetentionPolicy": policy,
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "www", "labels": {"tier": "data"}},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def claims_of(cluster: Workloads) -> dict[str, Object]:
    items = cluster.run(cluster.client.list(PVCS, "default"))["items"]
    return {c["metadata"]["name"]: c for c in items}


def test_stateful_set_claims_follow_the_retention_policy() -> None:
    """volumeClaimTemplates become claims before their pods, labelled with the selector; with
    whenScaled Delete a scaled-down pod's claim goes with it, with whenDeleted Delete the
    set's claims go with the set; Retain keeps them."""
    sets = catalog.kind("apps", "statefulsets")
    cluster = Workloads(nodes=2)
    try:
        standard = storage_class("standard", "WaitForFirstConsumer")
        standard["metadata"]["annotations"] = {
            "storageclass.kubernetes.io/is-default-class": "true"
        }
        create(cluster, CLASSES, standard)
        created = create(cluster, sets, web(3, whenScaled="Delete", whenDeleted="Delete"))
        cluster.settle(20)
        claims = claims_of(cluster)
        assert sorted(claims) == ["www-web-0", "www-web-1", "www-web-2"]
        first = claims["www-web-0"]
        assert first["metadata"]["labels"] == {"tier": "data", "app": "nginx"}
        assert first["status"]["phase"] == "Bound"
        assert first["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "web",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert [p["status"]["phase"] for p in cluster.pods(app="nginx")] == ["Running"] * 3
        assert "create Claim www-web-0 Pod web-0 in StatefulSet web success" in cluster.events(
            "SuccessfulCreate"
        )
        scaled = clone(cluster.get(sets, "web"))
        scaled["spec"]["replicas"] = 1
        cluster.run(cluster.client.update(sets, scaled))
        cluster.settle(60)
        assert sorted(claims_of(cluster)) == ["www-web-0"]
        cluster.run(cluster.client.delete(sets, "default", "web"))
        cluster.settle(60)
        assert claims_of(cluster) == {}
    finally:
        cluster.close()
