"""Deleting objects through `pinnace up` with kubectl 1.32 and the `kubernetes` Python client:
the generic registry's marks (deletion timestamp, grace period, generation), the garbage
collector's finalizers a DELETE sets, replaces or (for a kind that orphans by default) adds,
and the namespace registry's answer while a namespace is being emptied."""

from __future__ import annotations

import json
from typing import Any

import kubernetes
from tests.http.conftest import Cluster
from tests.support import eventually

from pinnace.api.objects import Object


def get(cluster: Cluster, *what: str) -> Object:
    return json.loads(cluster.ok("get", *what, "-o", "json"))


def create(cluster: Cluster, body: Object) -> Object:
    return json.loads(cluster.ok("create", "-f", "-", "-o", "json", stdin=json.dumps(body)))


def gone(cluster: Cluster, *what: str) -> bool:
    return cluster.kubectl("get", *what).returncode == 1


def config_map(name: str, **metadata: Any) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}


def owner_reference(owner: Object, block: bool = True) -> Object:
    m = owner["metadata"]
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": m["name"]}
    return ref | {"uid": m["uid"], "blockOwnerDeletion": block}


def test_the_first_delete_of_an_object_held_by_a_finalizer_bumps_its_generation(
    cluster: Cluster,
) -> None:
    cluster.ok("create", "deployment", "held", "--image=nginx", "--replicas=0")
    cluster.ok("patch", "deployment", "held", "--type=merge", "-p", FINALIZER)
    assert get(cluster, "deployment", "held")["metadata"]["generation"] == 1
    cluster.ok("delete", "deployment", "held", "--wait=false")
    m = get(cluster, "deployment", "held")["metadata"]
    assert (m["generation"], m["deletionGracePeriodSeconds"]) == (2, 0)
    assert m["finalizers"] == ["example.com/hold"]
    cluster.ok("delete", "deployment", "held", "--wait=false")
    assert get(cluster, "deployment", "held")["metadata"]["generation"] == 2
    cluster.ok("patch", "deployment", "held", "--type=json", "-p", DROP_FINALIZERS)
    eventually(lambda: gone(cluster, "deployment", "held"), timeout=10)


FINALIZER = '{"metadata":{"finalizers":["example.com/hold"]}}'
DROP_FINALIZERS = '[{"op":"remove","path":"/metadata/finalizers"}]'


def test_a_background_delete_drops_the_orphan_finalizer_the_owner_was_created_with(
    cluster: Cluster,
) -> None:
    """The propagation policy kubectl sends replaces the garbage collector's finalizers: the
    owner goes at once and its dependent after it, not orphaned."""
    owner = create(cluster, config_map("parent", finalizers=["orphan"]))
    create(cluster, config_map("child", ownerReferences=[owner_reference(owner)]))
    cluster.ok("delete", "configmap", "parent")
    assert gone(cluster, "configmap", "parent")
    eventually(lambda: gone(cluster, "configmap", "child"), timeout=10)


def test_a_foreground_delete_marks_the_owner_and_waits_for_its_held_dependent(
    cluster: Cluster,
) -> None:
    owner = create(cluster, config_map("lead", finalizers=["orphan"]))
    ref = owner_reference(owner)
    create(cluster, config_map("tail", ownerReferences=[ref], finalizers=["example.com/hold"]))
    cluster.ok("delete", "configmap", "lead", "--cascade=foreground", "--wait=false")
    lead = get(cluster, "configmap", "lead")["metadata"]
    assert lead["finalizers"] == ["foregroundDeletion"]
    assert lead["deletionGracePeriodSeconds"] == 0 and lead["deletionTimestamp"]
    eventually(
        lambda: "deletionTimestamp" in get(cluster, "configmap", "tail")["metadata"], timeout=10
    )
    tail = get(cluster, "configmap", "tail")["metadata"]
    assert tail["finalizers"] == ["example.com/hold"]
    assert tail["ownerReferences"] == [ref]
    assert get(cluster, "configmap", "lead")["metadata"]["finalizers"] == ["foregroundDeletion"]
    cluster.ok("patch", "configmap", "tail", "--type=json", "-p", DROP_FINALIZERS)
    eventually(lambda: gone(cluster, "configmap", "lead"), timeout=10)
    assert gone(cluster, "configmap", "tail")


def test_another_delete_of_a_namespace_being_emptied_answers_it_unchanged(
    cluster: Cluster,
) -> None:
    """v1.32's namespace registry answers the Terminating namespace (a 409 before v1.17)."""
    cluster.ok("create", "namespace", "emptying")
    create(cluster, config_map("left", namespace="emptying", finalizers=["example.com/hold"]))
    cluster.ok("delete", "namespace", "emptying", "--wait=false")
    m = get(cluster, "namespace", "emptying")["metadata"]
    assert m["deletionTimestamp"] and "deletionGracePeriodSeconds" not in m
    again = cluster.ok("delete", "namespace", "emptying", "--wait=false")
    assert again == 'namespace "emptying" deleted\n'
    assert get(cluster, "namespace", "emptying")["metadata"] == m
    cluster.ok("patch", "configmap", "left", "-n", "emptying", "--type=json", "-p", DROP_FINALIZERS)
    eventually(lambda: gone(cluster, "namespace", "emptying"), timeout=15)


def test_a_namespace_finalized_before_its_delete_is_terminating_until_deleted_again(
    cluster: Cluster,
) -> None:
    """The registry's first DELETE marks a namespace whatever its finalizers; the namespace
    controller leaves one without spec.finalizers alone, so only a second DELETE (or another
    write) removes it."""
    cluster.ok("create", "namespace", "finalized")
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "finalized"}}
    cluster.ok(
        "replace",
        "--raw",
        "/api/v1/namespaces/finalized/finalize",
        "-f",
        "-",
        stdin=json.dumps(body | {"spec": {"finalizers": []}}),
    )
    assert "finalizers" not in get(cluster, "namespace", "finalized")["spec"]
    cluster.ok("delete", "namespace", "finalized", "--wait=false")
    ns = get(cluster, "namespace", "finalized")
    assert ns["metadata"]["deletionTimestamp"] and ns["status"]["phase"] == "Terminating"
    cluster.ok("delete", "namespace", "finalized", "--wait=false")
    assert gone(cluster, "namespace", "finalized")


def python_client(cluster: Cluster) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(str(cluster.kubeconfig))


def pods_of(cluster: Cluster, selector: str) -> list[Object]:
    return get(cluster, "pods", "-l", selector)["items"]


def test_a_job_deleted_through_the_api_without_a_policy_keeps_its_pods(cluster: Cluster) -> None:
    """batch/v1 orphans by default, and says so in a Warning."""
    cluster.ok("create", "job", "kept", "--image=busybox", "--", "sleep", "600")
    eventually(lambda: pods_of(cluster, "job-name=kept"), timeout=10)
    jobs = kubernetes.client.BatchV1Api(python_client(cluster))
    answer = jobs.delete_namespaced_job("kept", "default", _preload_content=False)
    assert answer.status == 200
    assert answer.headers["Warning"] == (
        '299 - "child pods are preserved by default when jobs are deleted; set '
        "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
        'suppress this warning"'
    )
    eventually(lambda: gone(cluster, "job", "kept"), timeout=10)
    [pod] = pods_of(cluster, "job-name=kept")
    assert "ownerReferences" not in pod["metadata"]
    assert "deletionTimestamp" not in pod["metadata"]
    cluster.ok("delete", "pods", "-l", "job-name=kept")


def test_a_replication_controller_deleted_through_the_api_without_a_policy_keeps_its_pods(
    cluster: Cluster,
) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 1,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    create(cluster, manifest)
    eventually(lambda: pods_of(cluster, "app=legacy"), timeout=10)
    core = kubernetes.client.CoreV1Api(python_client(cluster))
    answer = core.delete_namespaced_replication_controller(
        "legacy", "default", _preload_content=False
    )
    assert (answer.status, answer.headers.get("Warning")) == (200, None)
    eventually(lambda: gone(cluster, "rc", "legacy"), timeout=10)
    [pod] = pods_of(cluster, "app=legacy")
    assert "ownerReferences" not in pod["metadata"]
    cluster.ok("delete", "pods", "-l", "app=legacy")


def test_kubectl_delete_job_still_takes_its_pods(cluster: Cluster) -> None:
    """kubectl names the background policy: nothing is orphaned, nothing is warned."""
    cluster.ok("create", "job", "swept", "--image=busybox", "--", "sleep", "600")
    eventually(lambda: pods_of(cluster, "job-name=swept"), timeout=10)
    done = cluster.kubectl("delete", "job", "swept")
    assert (done.returncode, done.stderr) == (0, "")
    eventually(lambda: not pods_of(cluster, "job-name=swept"), timeout=10)


def test_orphan_dependents_false_is_accepted_while_the_object_stays(cluster: Cluster) -> None:
    """The deprecated orphanDependents=false gets a 202 when a finalizer keeps the object (a
    200 when it goes at once)."""
    core = kubernetes.client.CoreV1Api(python_client(cluster))
    create(cluster, config_map("kept-for-now", finalizers=["example.com/hold"]))
    create(cluster, config_map("gone-now"))
    kept = core.delete_namespaced_config_map(
        "kept-for-now", "default", orphan_dependents=False, _preload_content=False
    )
    gone_now = core.delete_namespaced_config_map(
        "gone-now", "default", orphan_dependents=False, _preload_content=False
    )
    assert (kept.status, gone_now.status) == (202, 200)
    assert json.loads(kept.data)["metadata"]["deletionTimestamp"]
    cluster.ok("patch", "configmap", "kept-for-now", "--type=json", "-p", DROP_FINALIZERS)


def test_a_deletion_timestamp_cannot_be_set_by_an_update(cluster: Cluster) -> None:
    """The immutable field's bad value shows as metav1.Time's String()."""
    create(cluster, config_map("alive"))
    patch = '{"metadata":{"deletionTimestamp":"2020-01-02T03:04:05Z"}}'
    done = cluster.kubectl("patch", "configmap", "alive", "--type=merge", "-p", patch)
    assert done.stderr == (
        'The ConfigMap "alive" is invalid: metadata.deletionTimestamp: Invalid value: '
        "2020-01-02 03:04:05 +0000 UTC: field is immutable\n"
    )
    assert "deletionTimestamp" not in get(cluster, "configmap", "alive")["metadata"]
