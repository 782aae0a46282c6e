"""An update through `modify` stores its own copy of what the mutation returned: nothing the
caller still holds, and only JSON's own types, even in the parts whose text did not change."""

from __future__ import annotations

import contextlib
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


_STATUS = {
    "phase": "Running",
    "podIPs": [{"ip": "10.0.0.1"}],
    "conditions": [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ],
    "containerStatuses": [
        {
            "name": "c",
            "image": "nginx",
            "imageID": "",
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}},
        }
    ],
}
_ORDER = [{"type": "Initialized"}, {"type": "Ready"}, {"type": "PodScheduled"}]


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        (PatchType.MERGE, {"metadata": {"labels": {"new": "1"}, "annotations": None}}),
        (PatchType.MERGE, {"status": {"qosClass": None, "phase": "Failed"}}),
        (
            PatchType.STRATEGIC_MERGE,
            {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}},
        ),
        (PatchType.STRATEGIC_MERGE, {"status": {"$setElementOrder/conditions": _ORDER}}),
        (
            PatchType.STRATEGIC_MERGE,
            {
                "status": {
                    "containerStatuses": [
                        {
                            "name": "c",
                            "state": {"$retainKeys": ["terminated"], "terminated": {"exitCode": 0}},
                        }
                    ]
                }
            },
        ),
        (PatchType.STRATEGIC_MERGE, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/b"]}}),
        (PatchType.STRATEGIC_MERGE, {"metadata": {"labels": {"$patch": "replace", "z": "1"}}}),
        (PatchType.STRATEGIC_MERGE, {"status": {"$patch": "replace", "phase": "Pending"}}),
        (
            PatchType.JSON,
            [{"op": "move", "from": "/status/conditions/0", "path": "/status/conditions/-"}],
        ),
        (PatchType.JSON, [{"op": "copy", "from": "/status/podIPs/0", "path": "/status/podIPs/-"}]),
    ],
)
def test_pod_status_patches_leave_every_stored_version_as_written(
    api: Any, patch_type: PatchType, patch: Any
) -> None:
    # What a status patch shares with the stored pod (all it left alone) is changed by no step
    # of the update after it: each version read stays as it was, the patch itself too.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "web"}, "finalizers": ["a/b", "c/d"]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"},
    }
    api.call(api.server.create, PODS, "default", pod)
    sent = copy.deepcopy(patch)
    read = []
    for step in ({"status": _STATUS}, patch, patch):
        kind = PatchType.MERGE if step is not patch else patch_type
        obj = api.call(api.server.store.get, object_key(PODS, "default", "p"))
        read.append((obj, copy.deepcopy(obj)))
        with contextlib.suppress(StatusError):
            result = api.call(api.server.patch, PODS, "default", "p", kind, step, None, "status")
            read.append((result.obj, copy.deepcopy(result.obj)))
    assert patch == sent
    for obj, as_read in read:
        assert obj == as_read
