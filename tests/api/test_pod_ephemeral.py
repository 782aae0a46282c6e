"""Ephemeral containers in the API: the pods/ephemeralcontainers subresource as `kubectl debug`
writes it. Vectors written from v1.32's podEphemeralContainersStrategy and
ValidatePodEphemeralContainersUpdate."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError

PODS = catalog.kind("", "pods")
SUB = "ephemeralcontainers"


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }


def debugger(name: str = "debugger-abcde", **fields: Any) -> dict[str, Any]:
    # What `kubectl debug web --image=busybox -- echo dbg` patches in.
    return {
        "name": name,
        "image": "busybox",
        "command": ["echo", "dbg"],
        "resources": {},
        "terminationMessagePolicy": "File",
        **fields,
    }


def created(h: Harness, **spec: Any) -> dict[str, Any]:
    return h.call(h.server.create, PODS, "default", pod(**spec)).obj


def patch(h: Harness, document: Any, kind: PatchType = PatchType.STRATEGIC_MERGE) -> Any:
    return h.call(h.server.patch, PODS, "default", "web", kind, document, None, SUB).obj


def add(h: Harness, *containers: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = patch(h, {"spec": {"ephemeralContainers": list(containers)}})
    return result


def causes(h: Harness, document: Any, kind: PatchType = PatchType.STRATEGIC_MERGE) -> list[str]:
    with pytest.raises(StatusError) as e:
        patch(h, document, kind)
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    assert e.value.details is not None
    return [f"{c['field']}: {c['message']}" for c in e.value.details["causes"]]


def test_a_patch_adds_an_ephemeral_container_defaulted_and_nothing_else() -> None:
    h = Harness()
    created(h)
    document = {
        "metadata": {"labels": {"app": "other"}, "annotations": {"a": "b"}},
        "spec": {"ephemeralContainers": [debugger()], "activeDeadlineSeconds": 5},
        "status": {"phase": "Failed"},
    }
    result = patch(h, document)
    assert result["spec"]["ephemeralContainers"] == [
        {
            **debugger(),
            "imagePullPolicy": "Always",
            "terminationMessagePath": "/dev/termination-log",
        }
    ]
    # Only the ephemeral containers are taken from the write.
    assert "activeDeadlineSeconds" not in result["spec"]
    assert result["metadata"]["labels"] == {"app": "web"}
    assert "annotations" not in result["metadata"]
    assert result["status"]["phase"] == "Pending"
    # GET on the subresource is the pod.
    got = h.call(h.server.get, PODS, "default", "web")
    assert got["spec"]["ephemeralContainers"][0]["name"] == "debugger-abcde"


def test_ephemeral_containers_are_added_never_removed_nor_changed() -> None:
    h = Harness()
    created(h)
    add(h, debugger("one"))
    two = add(h, debugger("two"))
    # A strategic merge patch merges by name, its new items before the stored ones (kubectl
    # debug's patch keeps the order with a $setElementOrder directive).
    assert [c["name"] for c in two["spec"]["ephemeralContainers"]] == ["two", "one"]

    removal = [{"op": "remove", "path": "/spec/ephemeralContainers/0"}]
    assert causes(h, removal, PatchType.JSON) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "two" may not be '
        "removed\n"
    ]
    change = [{"op": "replace", "path": "/spec/ephemeralContainers/1/image", "value": "alpine"}]
    assert causes(h, change, PatchType.JSON) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "one" may not be '
        "changed\n"
    ]
    # Their order is not kept by patches: only names count.
    swapped = [
        {"op": "move", "from": "/spec/ephemeralContainers/1", "path": "/spec/ephemeralContainers/0"}
    ]
    result = patch(h, swapped, PatchType.JSON)
    assert [c["name"] for c in result["spec"]["ephemeralContainers"]] == ["one", "two"]


def test_an_ephemeral_container_is_checked_as_on_create() -> None:
    h = Harness()
    created(h)
    bad = debugger(
        "app",
        resources={"requests": {"cpu": "1"}},
        ports=[{"containerPort": 80}],
        targetContainerName="missing",
    )
    assert causes(h, {"spec": {"ephemeralContainers": [bad]}}) == [
        'spec.ephemeralContainers[0].name: Duplicate value: "app"',
        'spec.ephemeralContainers[0].targetContainerName: Not found: "missing"',
        "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral "
        "Container",
    ]
    targeted = add(h, debugger(targetContainerName="app"))
    assert targeted["spec"]["ephemeralContainers"][0]["targetContainerName"] == "app"


def test_a_mirror_pod_takes_no_ephemeral_container() -> None:
    h = Harness()
    mirror = pod(nodeName="node-1")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    h.call(h.server.create, PODS, "default", mirror)
    assert causes(h, {"spec": {"ephemeralContainers": [debugger()]}}) == [
        "[]: Forbidden: static pods do not support ephemeral containers"
    ]


def test_neither_create_nor_a_pod_update_sets_ephemeral_containers() -> None:
    h = Harness()
    with pytest.raises(StatusError) as e:
        created(h, ephemeralContainers=[debugger()])
    assert e.value.code == 422
    assert "spec.ephemeralContainers: Forbidden: cannot be set on create" in e.value.message
    created(h)
    with pytest.raises(StatusError) as e:
        h.call(
            h.server.patch,
            PODS,
            "default",
            "web",
            PatchType.STRATEGIC_MERGE,
            {"spec": {"ephemeralContainers": [debugger()]}},
        )
    assert e.value.code == 422
    assert "spec: Forbidden: pod updates may not change fields other than" in e.value.message


def test_limit_ranges_and_quotas_leave_ephemeral_containers_alone() -> None:
    h = Harness()
    limits = {
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
    }
    h.call(h.server.create, catalog.kind("", "limitranges"), "default", limits)
    quota = {
        "metadata": {"name": "cpu", "namespace": "default"},
        "spec": {"hard": {"limits.cpu": "1"}},
    }
    h.call(h.server.create, catalog.kind("", "resourcequotas"), "default", quota)
    created(h)
    # A LimitRange's defaults would give it resources, which it may not have; a quota on cpu
    # limits would want them set.
    result = add(h, debugger())
    assert result["spec"]["ephemeralContainers"][0]["resources"] == {}


def test_a_put_to_the_subresource_adds_one_too() -> None:
    h = Harness()
    body = copy.deepcopy(created(h))
    body["spec"]["ephemeralContainers"] = [debugger()]
    body["spec"]["containers"][0]["image"] = "nginx:1.27"  # not taken from this write
    result = h.call(h.server.update, PODS, "default", "web", body, None, SUB).obj
    assert [c["name"] for c in result["spec"]["ephemeralContainers"]] == ["debugger-abcde"]
    assert result["spec"]["containers"][0]["image"] == "nginx"
