"""A uid in a write's body names the object the write is for, as kube-apiserver reads it: in a
PUT it is a storage precondition (409), in a patch an immutable field (422). Either way a
write for an object deleted and recreated under the same name changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType

PODS = catalog.by_resource("", "pods")
NODES = catalog.by_resource("", "nodes")
CONFIGMAPS = catalog.by_resource("", "configmaps")
LEASES = catalog.by_resource("coordination.k8s.io", "leases")


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
