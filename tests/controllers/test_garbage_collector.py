"""The garbage collector with the workload controllers, scheduler and a node, on the virtual
clock: what each deletion propagation policy leaves behind; then through `pinnace up` and
kubectl, as a user meets it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.controllers.workloads import DEPLOYMENTS, PODS, REPLICA_SETS, Workloads, template
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.controllers.controller_utils import controller_ref

CONFIG_MAPS = catalog.kind("", "configmaps")


def deployment(replicas: int = 2) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=1)
    yield c
    c.close()


def names(cluster: Workloads, kind: object) -> list[str]:
    items = cluster.run(cluster.client.list(kind, "default"))["items"]
    return sorted(item["metadata"]["name"] for item in items)


def running_deployment(cluster: Workloads) -> tuple[Object, Object]:
    """A deployment `web` with its replica set and 2 pods."""
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment()))
    cluster.settle(5)
    [rs] = cluster.run(cluster.client.list(REPLICA_SETS, "default"))["items"]
    assert len(cluster.pods()) == 2
    return cluster.get(DEPLOYMENTS, "web"), rs


def delete(cluster: Workloads, kind: object, name: str, policy: str) -> None:
    options = DeleteOptions(propagation_policy=policy)
    cluster.run(cluster.client.delete(kind, "default", name, options))


def test_background_deletion_removes_the_replica_set_and_its_pods(cluster: Workloads) -> None:
    running_deployment(cluster)
    delete(cluster, DEPLOYMENTS, "web", "Background")
    cluster.settle(40)  # pods go when their node has stopped them (30 s grace at most)
    assert names(cluster, DEPLOYMENTS) == []
    assert names(cluster, REPLICA_SETS) == []
    assert names(cluster, PODS) == []


def test_orphan_deletion_keeps_the_replica_set_without_its_owner(cluster: Workloads) -> None:
    _, rs = running_deployment(cluster)
    delete(cluster, DEPLOYMENTS, "web", "Orphan")
    cluster.settle(5)
    assert names(cluster, DEPLOYMENTS) == []
    kept = cluster.get(REPLICA_SETS, rs["metadata"]["name"])
    assert kept["metadata"]["uid"] == rs["metadata"]["uid"]
    assert "ownerReferences" not in kept["metadata"]
    pods = cluster.pods()
    assert len(pods) == 2
    assert all(controller_ref(p)["uid"] == rs["metadata"]["uid"] for p in pods)  # type: ignore[index]


def test_foreground_deletion_deletes_dependents_before_the_owner(cluster: Workloads) -> None:
    _, rs = running_deployment(cluster)
    held = cluster.pods()[0]["metadata"]["name"]
    hold = {"metadata": {"finalizers": ["example.com/hold"]}}
    cluster.run(cluster.client.patch(PODS, "default", held, hold))
    delete(cluster, DEPLOYMENTS, "web", "Foreground")
    cluster.settle(5)
    # The pod a finalizer keeps blocks its replica set, which blocks the deployment.
    assert names(cluster, PODS) == [held]
    for kind, name in ((REPLICA_SETS, rs["metadata"]["name"]), (DEPLOYMENTS, "web")):
        waiting = cluster.get(kind, name)["metadata"]
        assert waiting["finalizers"] == ["foregroundDeletion"]
        assert waiting["deletionTimestamp"]
    cluster.run(cluster.client.patch(PODS, "default", held, {"metadata": {"finalizers": None}}))
    cluster.settle(2)
    assert names(cluster, PODS) == []
    assert names(cluster, REPLICA_SETS) == []
    assert names(cluster, DEPLOYMENTS) == []


def test_a_dependent_with_two_owners_loses_only_the_deleted_ones_reference(
    cluster: Workloads,
) -> None:
    owners = [
        cluster.run(cluster.client.create(CONFIG_MAPS, "default", {"metadata": {"name": n}}))
        for n in ("first", "second")
    ]
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
         "uid": o["metadata"]["uid"]}
        for o in owners
    ]  # fmt: skip
    dependent = {"metadata": {"name": "dependent", "ownerReferences": refs}}
    cluster.run(cluster.client.create(CONFIG_MAPS, "default", dependent))
    delete(cluster, CONFIG_MAPS, "first", "Background")
    cluster.settle(2)
    kept = cluster.get(CONFIG_MAPS, "dependent")
    assert kept["metadata"]["ownerReferences"] == [refs[1]]
    delete(cluster, CONFIG_MAPS, "second", "Background")
    cluster.settle(2)
    assert "dependent" not in names(cluster, CONFIG_MAPS)


def test_a_dependent_whose_owner_never_existed_is_collected(cluster: Workloads) -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
    dependent = {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
    cluster.run(cluster.client.create(CONFIG_MAPS, "default", dependent))
    cluster.settle(2)
    assert "dependent" not in names(cluster, CONFIG_MAPS)


def test_a_dependent_whose_owner_kind_is_unknown_is_kept(cluster: Workloads) -> None:
    ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "no-such-uid"}
    dependent = {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
    cluster.run(cluster.client.create(CONFIG_MAPS, "default", dependent))
    cluster.settle(5)
    assert cluster.get(CONFIG_MAPS, "dependent")["metadata"]["ownerReferences"] == [ref]


NODES = catalog.kind("", "nodes")
LEASES = catalog.kind("coordination.k8s.io", "leases")
CLUSTER_ROLES = catalog.kind("rbac.authorization.k8s.io", "clusterroles")


def test_a_deleted_nodes_lease_is_collected(cluster: Workloads) -> None:
    """The kubelet's Lease names its Node as owner: deleting the Node takes the Lease."""
    [node] = cluster.run(cluster.client.list(NODES, ""))["items"]
    name = node["metadata"]["name"]
    lease = cluster.run(cluster.client.get(LEASES, "kube-node-lease", name))
    assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    cluster.run(cluster.client.delete(NODES, "", name))
    cluster.settle(2)
    assert cluster.run(cluster.client.list(LEASES, "kube-node-lease"))["items"] == []


@pytest.mark.parametrize("policy", ["Orphan", "Foreground"])
def test_a_cluster_scoped_owner_deleted_with_a_policy_goes(cluster: Workloads, policy: str) -> None:
    """The finalizer an Orphan or Foreground deletion puts on a cluster-scoped owner is the
    collector's to take off, as on a namespaced one."""
    role = {"metadata": {"name": "reader"}, "rules": []}
    owner = cluster.run(cluster.client.create(CLUSTER_ROLES, "", role))
    ref = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "name": "reader", "uid": owner["metadata"]["uid"]}  # fmt: skip
    if policy == "Foreground":
        ref["blockOwnerDeletion"] = True
    dependents = [
        (CONFIG_MAPS, "default", {"metadata": {"name": "dependent", "ownerReferences": [ref]}}),
        (CLUSTER_ROLES, "", {"metadata": {"name": "aggregate", "ownerReferences": [ref]}}),
    ]
    for kind, namespace, body in dependents:
        cluster.run(cluster.client.create(kind, namespace, body))
    options = DeleteOptions(propagation_policy=policy)
    cluster.run(cluster.client.delete(CLUSTER_ROLES, "", "reader", options))
    cluster.settle(2)
    left = {
        r["metadata"]["name"] for r in cluster.run(cluster.client.list(CLUSTER_ROLES, ""))["items"]
    }
    assert "reader" not in left
    if policy == "Orphan":
        assert "aggregate" in left
        assert "ownerReferences" not in cluster.get(CONFIG_MAPS, "dependent")["metadata"]
    else:
        assert "aggregate" not in left
        assert "dependent" not in names(cluster, CONFIG_MAPS)


def test_a_cluster_scoped_dependent_of_a_namespaced_kind_is_kept(cluster: Workloads) -> None:
    """Its owner reference cannot be resolved (cluster-scoped dependents have cluster-scoped
    owners only), so it is never collected."""
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
    body = {"metadata": {"name": "stray", "ownerReferences": [ref]}}
    cluster.run(cluster.client.create(CLUSTER_ROLES, "", body))
    cluster.settle(5)
    kept = cluster.run(cluster.client.get(CLUSTER_ROLES, "", "stray"))
    assert kept["metadata"]["ownerReferences"] == [ref]


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(Path(tmp_path_factory.mktemp("pinnace-gc")), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_kubectl_delete_deployment_removes_its_replica_sets_and_pods(up: Cluster) -> None:
    up.ok("create", "deployment", "web", "--image=nginx", "--replicas=2")
    up.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert len(up.ok("get", "pods", "-l", "app=web", "-o", "name").split()) == 2
    assert up.ok("delete", "deployment", "web").strip() == 'deployment.apps "web" deleted'
    eventually(lambda: up.ok("get", "rs,pods", "-l", "app=web", "-o", "name") == "", timeout=10)


def test_kubectl_delete_cascade_orphan_leaves_the_replica_set(up: Cluster) -> None:
    up.ok("create", "deployment", "x", "--image=nginx", "--replicas=1")
    up.ok("rollout", "status", "deployment/x", "--timeout=60s")
    up.ok("delete", "deployment", "x", "--cascade=orphan")
    [rs] = json.loads(up.ok("get", "rs", "-l", "app=x", "-o", "json"))["items"]
    assert "ownerReferences" not in rs["metadata"]
    assert rs["status"]["replicas"] == 1
    assert len(up.ok("get", "pods", "-l", "app=x", "-o", "name").split()) == 1


def test_kubectl_delete_node_takes_its_lease_and_a_foreground_delete_ends(up: Cluster) -> None:
    [node] = up.ok("get", "nodes", "-o", "name").split()
    name = node.removeprefix("node/")
    assert (
        up.ok("get", "lease", "-n", "kube-node-lease", "-o", "name")
        == f"lease.coordination.k8s.io/{name}\n"
    )
    up.ok("create", "clusterrole", "reader", "--verb=get", "--resource=pods")
    done = up.kubectl("delete", "clusterrole", "reader", "--cascade=foreground", "--timeout=15s")
    assert done.returncode == 0, done.stderr
    assert up.kubectl("get", "clusterrole", "reader").returncode != 0
    up.ok("delete", "node", name)
    eventually(
        lambda: up.ok("get", "lease", "-n", "kube-node-lease", "-o", "name") == "", timeout=10
    )


def owned_config_map(up: Cluster, name: str, namespace: str, owner: Object) -> str:
    """A ConfigMap `name` in `namespace` naming `owner` (as `kubectl get -o json` gave it)."""
    m = owner["metadata"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": m["name"], "uid": m["uid"]}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    body["metadata"] |= {"namespace": namespace, "ownerReferences": [ref]}
    up.ok("create", "-f", "-", stdin=json.dumps(body))
    return m["uid"]


def invalid_namespace_events(up: Cluster) -> list[Object]:
    listed = up.ok(
        "get", "events", "-A", "--field-selector=reason=OwnerRefInvalidNamespace", "-o", "json"
    )
    return json.loads(listed)["items"]


def test_kubectl_a_dependent_in_another_namespace_than_its_owner_is_collected(
    up: Cluster,
) -> None:
    """A namespaced owner counts in its dependent's namespace only: the one of that uid in
    another namespace is taken as absent, the dependent goes, and a Warning says why."""
    up.ok("create", "namespace", "owners")
    up.ok("create", "namespace", "dependents")
    up.ok("create", "configmap", "owner", "-n", "owners")
    owner = json.loads(up.ok("get", "configmap", "owner", "-n", "owners", "-o", "json"))
    uid = owned_config_map(up, "stray", "dependents", owner)
    owned_config_map(up, "kept", "owners", owner)
    eventually(
        lambda: up.kubectl("get", "configmap", "stray", "-n", "dependents").returncode == 1,
        timeout=10,
    )
    eventually(lambda: invalid_namespace_events(up) != [], timeout=10)
    [event] = invalid_namespace_events(up)
    assert event["metadata"]["namespace"] == "dependents"
    assert event["type"] == "Warning"
    assert event["source"] == {"component": "garbage-collector-controller"}
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["involvedObject"]["name"] == "stray"
    assert event["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: dependents, name: owner, uid: {uid}] "
        'does not exist in namespace "dependents"'
    )
    assert up.kubectl("get", "configmap", "kept", "-n", "owners").returncode == 0


def test_kubectl_a_cluster_scoped_dependent_of_a_namespaced_owner_is_kept_with_a_warning(
    up: Cluster,
) -> None:
    up.ok("create", "namespace", "holders")
    up.ok("create", "configmap", "holder", "-n", "holders")
    owner = json.loads(up.ok("get", "configmap", "holder", "-n", "holders", "-o", "json"))
    m = owner["metadata"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "holder", "uid": m["uid"]}
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "held", "ownerReferences": [ref]},
    }
    up.ok("create", "-f", "-", stdin=json.dumps(body))

    def event() -> Object | None:
        found = [e for e in invalid_namespace_events(up) if e["involvedObject"]["name"] == "held"]
        return found[0] if found else None

    eventually(lambda: event() is not None, timeout=10)
    warning = event()
    assert warning is not None
    assert warning["metadata"]["namespace"] == "default"
    assert warning["involvedObject"]["kind"] == "ClusterRole"
    assert warning["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: , name: holder, uid: {m['uid']}] "
        'does not exist in namespace ""'
    )
    assert up.kubectl("get", "clusterrole", "held").returncode == 0


def config_map_owned_by(up: Cluster, name: str, *owners: Object, **metadata: Any) -> Object:
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"]}
        | {"uid": o["metadata"]["uid"], "blockOwnerDeletion": True}
        for o in owners
    ]
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}
    if refs:
        body["metadata"]["ownerReferences"] = refs
    return json.loads(up.ok("create", "-f", "-", "-o", "json", stdin=json.dumps(body)))


def test_kubectl_foreground_owner_goes_when_its_dependent_keeps_another_owner(up: Cluster) -> None:
    """The dependent with a solid owner only loses its reference to the one deleting in the
    foreground; that owner then waits for nothing and goes (its own finalizer aside)."""
    solid = config_map_owned_by(up, "solid")
    waiting = config_map_owned_by(up, "waiting", finalizers=["example.com/hold"])
    config_map_owned_by(up, "shared", solid, waiting)
    up.ok("delete", "configmap", "waiting", "--cascade=foreground", "--wait=false")

    def finalizers() -> list[str]:
        return json.loads(up.ok("get", "configmap", "waiting", "-o", "json"))["metadata"][
            "finalizers"
        ]

    eventually(lambda: finalizers() == ["example.com/hold"], timeout=10)
    shared = json.loads(up.ok("get", "configmap", "shared", "-o", "json"))["metadata"]
    assert [ref["name"] for ref in shared["ownerReferences"]] == ["solid"]
    up.ok("patch", "configmap", "waiting", "--type=json", "-p", DROP_FINALIZERS)
    eventually(lambda: up.kubectl("get", "configmap", "waiting").returncode == 1, timeout=10)


DROP_FINALIZERS = '[{"op":"remove","path":"/metadata/finalizers"}]'


def test_kubectl_foreground_delete_of_owners_that_own_each_other_ends(up: Cluster) -> None:
    """Each blocks the other's deletion: the collector unblocks the dependent's references,
    as v1.32's cycle check does, and both go."""
    first = config_map_owned_by(up, "first")
    second = config_map_owned_by(up, "second", first)
    m = second["metadata"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "second", "uid": m["uid"]}
    patch = {"metadata": {"ownerReferences": [ref | {"blockOwnerDeletion": True}]}}
    up.ok("patch", "configmap", "first", "--type=merge", "-p", json.dumps(patch))
    done = up.kubectl("delete", "configmap", "first", "--cascade=foreground", "--timeout=20s")
    assert done.returncode == 0, done.stderr
    eventually(lambda: up.kubectl("get", "configmap", "second").returncode == 1, timeout=10)


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "collected"),
    [
        ("v1", "ConfigMap", "not-the-owner", True),
        ("v1", "Secret", "named", True),
        ("apps/v1", "ConfigMap", "named", False),
    ],
)
def test_kubectl_a_reference_with_the_owners_uid_but_other_coordinates(
    up: Cluster, api_version: str, kind: str, name: str, collected: bool
) -> None:
    """The uid alone does not make the owner: the reference is looked up by its kind and name
    (absent: collected); a kind the API does not serve at that version cannot be looked up
    (kept)."""
    dependent = f"mislabelled-{kind.lower()}-{name}"
    up.ok("create", "configmap", "named")
    owner = json.loads(up.ok("get", "configmap", "named", "-o", "json"))
    ref = {"apiVersion": api_version, "kind": kind, "name": name}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": dependent}}
    body["metadata"]["ownerReferences"] = [ref | {"uid": owner["metadata"]["uid"]}]
    up.ok("create", "-f", "-", stdin=json.dumps(body))
    if collected:
        eventually(lambda: up.kubectl("get", "configmap", dependent).returncode == 1)
    else:
        up.ok("delete", "configmap", "named")  # its owner is checked again: still unresolvable
        time.sleep(2)
        assert up.kubectl("get", "configmap", dependent).returncode == 0
        up.ok("delete", "configmap", dependent)
    up.ok("delete", "configmap", "named", "--ignore-not-found")
