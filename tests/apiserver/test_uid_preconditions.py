"""A uid in a write's body names the object the write is for, as kube-apiserver reads it: in a
PUT it is a storage precondition (409), in a patch an immutable field (422). Either way a
write for an object deleted and recreated under the same name changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.objects import resource_version
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
CONFIGMAPS = catalog.kind("", "configmaps")
LEASES = catalog.kind("coordination.k8s.io", "leases")


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


def error(api: Any, fn: Any, *args: Any, **kwargs: Any) -> StatusError:
    with pytest.raises(StatusError) as e:
        api.call(fn, *args, **kwargs)
    return e.value


def test_a_status_patch_with_another_uid_is_refused_and_changes_nothing(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod("web")).obj
    client = LocalClient(api.server)
    patch = {"metadata": {"uid": "a-deleted-pod"}, "status": {"phase": "Running"}}
    e = error(
        api, client.patch, PODS, "default", "web", patch, PatchType.MERGE, subresource="status"
    )
    assert (e.code, e.reason) == (422, "Invalid")
    assert e.message == (
        'Pod "web" is invalid: metadata.uid: Invalid value: "a-deleted-pod": field is immutable'
    )
    assert api.call(api.server.get, PODS, "default", "web") == created

    patch["metadata"]["uid"] = created["metadata"]["uid"]
    patched = api.call(
        client.patch, PODS, "default", "web", patch, PatchType.MERGE, subresource="status"
    )
    assert patched["status"]["phase"] == "Running"


def test_a_put_with_another_uid_fails_its_precondition_with_409(api: Any) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    created = api.call(api.server.create, CONFIGMAPS, "default", body).obj
    stale = {**created, "metadata": {**created["metadata"], "uid": "old"}, "data": {"a": "1"}}
    e = error(api, api.server.update, CONFIGMAPS, "default", "c", stale)
    assert (e.code, e.reason) == (409, "Conflict")
    assert e.message == (
        'Operation cannot be fulfilled on configmaps "c": StorageError: invalid object, '
        "Code: 4, Key: /registry/configmaps/default/c, ResourceVersion: 0, "
        "AdditionalErrorMsg: Precondition failed: UID in precondition: old, "
        f"UID in object meta: {created['metadata']['uid']}"
    )
    assert api.call(api.server.get, CONFIGMAPS, "default", "c") == created

    # The precondition comes before the resourceVersion check, and holds for subresources.
    current = api.call(api.server.create, PODS, "default", pod("web")).obj
    stale = {**current, "metadata": {**current["metadata"], "uid": "old", "resourceVersion": "1"}}
    e = error(api, api.server.update, PODS, "default", "web", stale, None, "status")
    assert e.code == 409 and "UID in precondition: old, UID in object meta: " in e.message

    fresh = {**created, "data": {"a": "2"}}
    assert api.call(api.server.update, CONFIGMAPS, "default", "c", fresh).obj["data"] == {"a": "2"}


def test_the_key_a_precondition_failure_names_is_the_etcd_key(api: Any) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    created = api.call(api.server.create, NODES, "", node).obj
    stale = {**created, "metadata": {**created["metadata"], "uid": "old"}}
    e = error(api, api.server.update, NODES, "", "n1", stale)
    assert "Key: /registry/minions/n1," in e.message


def test_a_put_with_a_uid_creates_nothing_where_a_put_may_create(api: Any) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "gone", "uid": "old"},
        "spec": {"holderIdentity": "gone"},
    }
    e = error(api, api.server.update, LEASES, "default", "gone", lease)
    assert e.code == 409
    assert e.message.endswith("Precondition failed: UID in precondition: old, UID in object meta: ")
    assert error(api, api.server.get, LEASES, "default", "gone").code == 404


DEPLOYMENTS = catalog.kind("apps", "deployments")


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod(name)["spec"]},
        },
    }


def test_a_delete_with_a_stale_uid_is_a_conflict_naming_the_kind(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod("web")).obj
    uid = created["metadata"]["uid"]
    stale = DeleteOptions(precondition_uid="a-deleted-pod")
    e = error(api, api.server.delete, PODS, "default", "web", stale)
    assert (e.code, e.reason) == (409, "Conflict")
    assert e.message == (
        'Operation cannot be fulfilled on Pod "web": the UID in the precondition '
        f"(a-deleted-pod) does not match the UID in record ({uid}). "
        "The object might have been deleted and then recreated"
    )
    assert e.details == {"name": "web", "kind": "Pod"}
    assert api.call(api.server.get, PODS, "default", "web") == created

    deleted = api.call(
        api.server.delete, PODS, "default", "web", DeleteOptions(precondition_uid=uid)
    )
    assert deleted.obj["metadata"]["uid"] == uid
    assert error(api, api.server.get, PODS, "default", "web").code == 404


def test_a_delete_with_a_stale_resource_version_is_a_conflict_naming_the_kind(api: Any) -> None:
    created = api.call(api.server.create, DEPLOYMENTS, "default", deployment("web")).obj
    rv = created["metadata"]["resourceVersion"]
    stale = DeleteOptions(precondition_resource_version="1")
    e = error(api, api.server.delete, DEPLOYMENTS, "default", "web", stale)
    assert (e.code, e.reason) == (409, "Conflict")
    assert e.message == (
        'Operation cannot be fulfilled on Deployment.apps "web": the ResourceVersion in the '
        f"precondition (1) does not match the ResourceVersion in record ({rv}). "
        "The object might have been modified"
    )
    assert e.details == {"name": "web", "group": "apps", "kind": "Deployment"}
    assert api.call(api.server.get, DEPLOYMENTS, "default", "web") == created

    # The uid is checked first; a dry run checks them too.
    both = DeleteOptions(precondition_uid="old", precondition_resource_version="1", dry_run=True)
    e = error(api, api.server.delete, DEPLOYMENTS, "default", "web", both)
    assert "the UID in the precondition (old)" in e.message

    matching = DeleteOptions(
        precondition_uid=created["metadata"]["uid"], precondition_resource_version=rv
    )
    answer = api.call(api.server.delete, DEPLOYMENTS, "default", "web", matching).obj
    assert answer["status"] == "Success"
    assert error(api, api.server.get, DEPLOYMENTS, "default", "web").code == 404


def test_a_delete_collection_applies_the_preconditions_to_each_object(api: Any) -> None:
    created = api.call(api.server.create, CONFIGMAPS, "default", config_map("c")).obj
    stale = DeleteOptions(precondition_uid="old")
    e = error(api, api.server.delete_collection, CONFIGMAPS, "default", None, stale)
    assert e.code == 409
    assert e.message.startswith('Operation cannot be fulfilled on ConfigMap "c": the UID')
    assert api.call(api.server.get, CONFIGMAPS, "default", "c") == created

    matching = DeleteOptions(precondition_uid=created["metadata"]["uid"])
    api.call(api.server.delete_collection, CONFIGMAPS, "default", None, matching)
    assert error(api, api.server.get, CONFIGMAPS, "default", "c").code == 404


def test_a_write_racing_the_removal_fails_the_resource_version_in_the_stores_words(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = api.call(api.server.create, CONFIGMAPS, "default", config_map("c")).obj
    store = api.server.store
    real_delete = store.delete

    async def delete_after_a_write(at: str, rv: int) -> Any:
        changed = {**created, "data": {"a": "2"}}
        await store.update(at, changed, resource_version(created))
        return await real_delete(at, rv)

    monkeypatch.setattr(store, "delete", delete_after_a_write)
    rv = created["metadata"]["resourceVersion"]
    e = error(
        api,
        api.server.delete,
        CONFIGMAPS,
        "default",
        "c",
        DeleteOptions(precondition_resource_version=rv),
    )
    current = api.call(api.server.get, CONFIGMAPS, "default", "c")
    assert e.code == 409
    assert e.message == (
        'Operation cannot be fulfilled on configmaps "c": StorageError: invalid object, '
        f"Code: 4, Key: /registry/configmaps/default/c, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {rv}, "
        f"ResourceVersion in object meta: {current['metadata']['resourceVersion']}"
    )
    assert current["data"] == {"a": "2"}
