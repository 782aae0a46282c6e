"""The official `kubernetes` Python client against `pinnace up`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config, utils, watch
from tests.http.conftest import Cluster


@pytest.fixture(scope="module")
def core(cluster: Cluster) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
    }


def test_create_read_patch_delete(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod("py-a", app="py"))
    assert created.metadata.uid and created.status.phase == "Pending"
    assert created.metadata.managed_fields[0].manager == "OpenAPI-Generator"
    read = core.read_namespaced_pod("py-a", "default")
    assert read.metadata.resource_version == created.metadata.resource_version
    patched = core.patch_namespaced_pod("py-a", "default", {"metadata": {"labels": {"v": "2"}}})
    assert patched.metadata.labels == {"app": "py", "v": "2"}
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    deleted = core.delete_namespaced_pod("py-a", "default")
    assert deleted.metadata.name == "py-a"
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_pod("py-a", "default")
    assert e.value.status == 404


def test_list_with_label_selector_and_pages(core: client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_pod("kube-public", pod(f"page-{i}", batch="pages"))
    core.create_namespaced_pod("kube-public", pod("other", batch="other"))
    selected = core.list_namespaced_pod("kube-public", label_selector="batch=pages")
    assert sorted(p.metadata.name for p in selected.items) == [f"page-{i}" for i in range(5)]
    seen: list[str] = []
    versions = set()
    token = None
    while True:
        page = core.list_namespaced_pod(
            "kube-public", label_selector="batch=pages", limit=2, _continue=token
        )
        seen += [p.metadata.name for p in page.items]
        versions.add(page.metadata.resource_version)
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"page-{i}" for i in range(5)]
    assert len(versions) == 1


def test_a_list_at_resource_version_0_ignores_limit(core: client.CoreV1Api) -> None:
    for i in range(3):
        core.create_namespaced_pod("kube-public", pod(f"rv0-{i}", batch="rv0"))
    listed = core.list_namespaced_pod(
        "kube-public", label_selector="batch=rv0", limit=1, resource_version="0"
    )
    assert [p.metadata.name for p in listed.items] == ["rv0-0", "rv0-1", "rv0-2"]
    assert listed.metadata._continue is None


def test_a_dry_run_delete_answers_as_the_delete_would(core: client.CoreV1Api) -> None:
    """kube-apiserver's registry finishes a dry-run delete as a real one: a Status for a
    ConfigMap, the object for a pod (whose registry returns the deleted object)."""
    created = core.create_namespaced_config_map("kube-public", {"metadata": {"name": "dry-cm"}})
    answer = core.api_client.call_api(
        "/api/v1/namespaces/kube-public/configmaps/dry-cm",
        "DELETE",
        query_params=[("dryRun", "All")],
        response_type="object",
        _return_http_data_only=True,
    )
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "dry-cm", "kind": "configmaps", "uid": created.metadata.uid},
    }
    assert core.read_namespaced_config_map("dry-cm", "kube-public").metadata.uid
    core.create_namespaced_pod("kube-public", pod("dry-delete"))
    deleted = core.delete_namespaced_pod("dry-delete", "kube-public", dry_run="All")
    assert deleted.kind == "Pod" and deleted.metadata.name == "dry-delete"
    assert core.read_namespaced_pod("dry-delete", "kube-public").metadata.deletion_timestamp is None


def test_an_eviction_whose_body_and_query_dry_runs_differ_is_refused(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("kube-public", pod("dry-evict"))
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name="dry-evict"),
        delete_options=client.V1DeleteOptions(dry_run=["All", "All"]),
    )
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_pod_eviction("dry-evict", "kube-public", body, dry_run="All")
    assert e.value.status == 500
    refusal = json.loads(e.value.body)
    assert "reason" not in refusal
    assert refusal["message"] == (
        "Non-matching dry-run options in request and content: [All] and [All All]"
    )
    assert core.read_namespaced_pod("dry-evict", "kube-public").metadata.deletion_timestamp is None


def test_watch_streams_events_until_its_timeout(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("kube-node-lease", pod("watched", app="w"))
    events = [
        (event["type"], event["object"].metadata.name)
        for event in watch.Watch().stream(
            core.list_namespaced_pod, "kube-node-lease", timeout_seconds=1
        )
    ]
    assert events == [("ADDED", "watched")]


def test_conflict_and_invalid_are_api_exceptions(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "cm-conflict"}, "data": {"a": "1"}}
    )
    stale = created.to_dict()
    core.patch_namespaced_config_map("cm-conflict", "default", {"data": {"a": "2"}})
    body = {
        "metadata": {
            "name": "cm-conflict",
            "resourceVersion": stale["metadata"]["resource_version"],
        },
        "data": {"a": "3"},
    }
    with pytest.raises(client.ApiException) as e:
        core.replace_namespaced_config_map("cm-conflict", "default", body)
    assert e.value.status == 409
    assert "the object has been modified" in e.value.body
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_pod("default", pod("Not_Valid"))
    assert e.value.status == 422
    assert '"reason":"Invalid"' in e.value.body


def test_watch_from_a_list_sees_later_changes_in_order(core: client.CoreV1Api) -> None:
    listed = core.list_namespaced_config_map("kube-node-lease")
    core.create_namespaced_config_map(
        "kube-node-lease", {"metadata": {"name": "changing"}, "data": {"v": "1"}}
    )
    core.patch_namespaced_config_map("changing", "kube-node-lease", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("changing", "kube-node-lease")
    events = [
        (event["type"], event["object"].data)
        for event in watch.Watch().stream(
            core.list_namespaced_config_map,
            "kube-node-lease",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    ]
    assert events == [("ADDED", {"v": "1"}), ("MODIFIED", {"v": "2"}), ("DELETED", {"v": "2"})]


def test_a_dry_run_create_of_a_taken_name_is_already_exists(core: client.CoreV1Api) -> None:
    body = {"metadata": {"name": "dry-taken"}, "data": {"v": "1"}}
    core.create_namespaced_config_map("default", body)
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_config_map("default", body, dry_run="All")
    assert (e.value.status, json.loads(e.value.body)["reason"]) == (409, "AlreadyExists")


def test_a_watch_asking_for_no_initial_events_gets_none(core: client.CoreV1Api) -> None:
    existing = core.list_namespaced_config_map("kube-public").items
    assert existing  # kube-root-ca.crt at least
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            "kube-public",
            send_initial_events=False,
            resource_version_match="NotOlderThan",
            timeout_seconds=1,
        )
    )
    assert events == []


@pytest.fixture(scope="module")
def apps(core: client.CoreV1Api) -> client.AppsV1Api:
    return client.AppsV1Api(core.api_client)


def deployment(name: str, *containers: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": c, "image": "nginx:1.27"} for c in containers]},
            },
        },
    }


def container_images(d: client.V1Deployment) -> list[str]:
    return [f"{c.name}={c.image}" for c in d.spec.template.spec.containers]


def test_patch_kinds(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", deployment("py-patched", "main"))
    # A dict body goes as a strategic merge patch: containers merge by name.
    side = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    patched = apps.patch_namespaced_deployment("py-patched", "default", side)
    assert container_images(patched) == ["side=busybox", "main=nginx:1.27"]
    # A list body goes as a JSON patch.
    ops = [{"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "x:2"}]
    patched = apps.patch_namespaced_deployment("py-patched", "default", ops)
    assert container_images(patched) == ["side=busybox", "main=x:2"]


def test_scale_subresource(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", deployment("py-scaled", "main"))
    scale = apps.patch_namespaced_deployment_scale(
        "py-scaled", "default", {"spec": {"replicas": 4}}
    )
    assert scale.spec.replicas == 4
    assert scale.status.selector == "app=py-scaled"
    assert apps.read_namespaced_deployment("py-scaled", "default").spec.replicas == 4


def test_a_deleted_pod_is_seen_terminating_then_gone(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("kube-system", pod("py-brief"))
    listed = core.list_namespaced_pod("kube-system", field_selector="metadata.name=py-brief")
    deleted = core.delete_namespaced_pod("py-brief", "kube-system")
    assert deleted.metadata.deletion_grace_period_seconds == 0
    events = []
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_pod,
        "kube-system",
        field_selector="metadata.name=py-brief",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        events.append((event["type"], event["object"].metadata.deletion_timestamp is not None))
        if event["type"] == "DELETED":
            watcher.stop()
    assert events == [("MODIFIED", True), ("DELETED", True)]


def test_a_delete_whose_preconditions_fail_is_a_conflict(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod("py-preconditioned"))
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="a-deleted-pod"))
    with pytest.raises(client.ApiException) as e:
        core.delete_namespaced_pod("py-preconditioned", "default", body=stale)
    assert e.value.status == 409
    answer = json.loads(e.value.body)
    assert answer["message"] == (
        'Operation cannot be fulfilled on Pod "py-preconditioned": the UID in the precondition '
        f"(a-deleted-pod) does not match the UID in record ({created.metadata.uid}). "
        "The object might have been deleted and then recreated"
    )
    assert (answer["reason"], answer["details"]) == (
        "Conflict",
        {"name": "py-preconditioned", "kind": "Pod"},
    )
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1"))
    with pytest.raises(client.ApiException) as e:
        core.delete_namespaced_pod("py-preconditioned", "default", body=stale)
    assert e.value.status == 409
    assert "the ResourceVersion in the precondition (1) does not match" in e.value.body
    core.read_namespaced_pod("py-preconditioned", "default")

    matching = client.V1Preconditions(
        uid=created.metadata.uid, resource_version=created.metadata.resource_version
    )
    core.delete_namespaced_pod(
        "py-preconditioned", "default", body=client.V1DeleteOptions(preconditions=matching)
    )
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_pod("py-preconditioned", "default")
    assert e.value.status == 404


TRIPLE_NGINX = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: triple-nginx
spec:
  selector:
    matchLabels:
      app: triple-nginx
  template:
    metadata:
      labels:
        app: triple-nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


def test_create_from_yaml_reports_each_conflict_in_kube_apiservers_words(
    core: client.CoreV1Api,
) -> None:
    """The Python client's own e2e test_create_from_multi_resource_yaml_with_multi_conflicts:
    its FailToCreateError is the text of each error body."""
    core.create_namespace({"metadata": {"name": "yaml-conflicts"}})
    documents = list(yaml.safe_load_all("---".join([TRIPLE_NGINX] * 3)))
    with pytest.raises(utils.FailToCreateError) as e:
        utils.create_from_yaml(core.api_client, yaml_objects=documents, namespace="yaml-conflicts")
    one = (
        'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},'
        '"status":"Failure","message":"deployments.apps \\"triple-nginx\\" already exists",'
        '"reason":"AlreadyExists","details":{"name":"triple-nginx","group":"apps",'
        '"kind":"deployments"},"code":409}\n'
    )
    assert str(e.value) == one + one
    apps = client.AppsV1Api(core.api_client)
    apps.delete_namespaced_deployment("triple-nginx", "yaml-conflicts")
