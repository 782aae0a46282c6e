"""An update through `modify` stores its own copy of what the mutation returned: nothing the
caller still holds, and only JSON's own types, even in the parts whose text did not change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.apiserver.keys import object_key

CONFIGMAPS = catalog.kind("", "configmaps")
PODS = catalog.kind("", "pods")


def configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"app": "web"}, "finalizers": ["example.com/keep"]},
        "data": {"k": "v"},
    }


def stored(api: Any) -> Any:
    return api.call(api.server.store.get, object_key(CONFIGMAPS, "default", "cm"))


def test_a_part_the_caller_holds_is_not_stored_itself(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", configmap())
    held = {"app": "web"}  # the same labels, in the caller's own dict

    def mutate(cm: Any) -> Any:
        cm["metadata"]["labels"] = held
        cm["data"]["k"] = "w"
        return cm

    result = api.call(api.server.modify, CONFIGMAPS, "default", "cm", mutate)
    held["app"] = "changed later"
    assert stored(api)["metadata"]["labels"] == {"app": "web"}
    assert result.obj["metadata"]["labels"] == {"app": "web"}


def test_a_part_with_the_stored_text_but_other_types_is_refused_as_without_it(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", configmap())

    def mutate(cm: Any) -> Any:
        cm["metadata"]["finalizers"] = ("example.com/keep",)  # writes as the stored list
        cm["data"]["k"] = "w"
        return cm

    with pytest.raises(StatusError) as e:
        api.call(api.server.modify, CONFIGMAPS, "default", "cm", mutate)
    assert e.value.code == 400
    finalizers = stored(api)["metadata"]["finalizers"]
    assert type(finalizers) is list
    assert finalizers == ["example.com/keep"]


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        (PatchType.MERGE, {"metadata": {"labels": {"app": "db"}}, "data": {"k": None, "n": "1"}}),
        (PatchType.STRATEGIC_MERGE, {"metadata": {"finalizers": ["example.com/more"]}}),
        (PatchType.JSON, [{"op": "replace", "path": "/data/k", "value": "w"}]),
    ],
)
def test_a_patch_leaves_the_object_it_read_as_stored(
    api: Any, patch_type: PatchType, patch: Any
) -> None:
    # The patch is applied to the stored object itself (not a copy), which readers share.
    api.call(api.server.create, CONFIGMAPS, "default", configmap())
    read = stored(api)
    before = copy.deepcopy(read)
    result = api.call(api.server.patch, CONFIGMAPS, "default", "cm", patch_type, patch)
    assert read == before
    assert result.obj != before
    assert result.obj["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]


def test_a_pod_status_patch_leaves_the_pod_it_read_as_stored(api: Any) -> None:
    # pods/status runs no defaults, so what the patch left alone stays the stored pod's own.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"},
    }
    api.call(api.server.create, PODS, "default", pod)
    read = api.call(api.server.store.get, object_key(PODS, "default", "p"))
    before = copy.deepcopy(read)
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    for patch_type in (PatchType.MERGE, PatchType.STRATEGIC_MERGE):
        result = api.call(
            api.server.patch, PODS, "default", "p", patch_type, {"status": status}, None, "status"
        )
        assert read == before
        assert result.obj["status"]["phase"] == "Running"
        assert result.obj["spec"] == before["spec"]
        assert result.obj["metadata"]["labels"] == {"app": "web"}
    assert result.obj["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
