"""Strategic merge patch on the served kinds, checked against apimachinery v1.32 semantics
(strategicpatch.StrategicMergeMapPatch) and the v1.32 OpenAPI patch strategies."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api.patch import apply_strategic_merge_patch
from pinnace.api.status import StatusError


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a", "b"]},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "log", "image": "busybox"},
            ],
            **spec,
        },
    }


def containers(patched: dict[str, Any]) -> list[dict[str, Any]]:
    return patched["spec"]["containers"]


def test_changing_one_image_keeps_the_other_containers() -> None:
    patched = apply_strategic_merge_patch(
        pod(), {"spec": {"containers": [{"name": "log", "image": "busybox:2"}]}}, "Pod"
    )
    assert containers(patched) == [
        {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "log", "image": "busybox:2"},
    ]


def test_a_new_container_comes_first_when_the_patch_names_it_first() -> None:
    patch = {"spec": {"containers": [{"name": "new", "image": "redis"}, {"name": "app"}]}}
    patched = apply_strategic_merge_patch(pod(), patch, "Pod")
    assert [c["name"] for c in containers(patched)] == ["new", "app", "log"]


def test_patch_delete_removes_one_container() -> None:
    patch = {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}
    assert containers(apply_strategic_merge_patch(pod(), patch, "Pod")) == [
        {"name": "log", "image": "busybox"}
    ]


def test_patch_replace_in_a_list_replaces_it() -> None:
    patch = {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}}
    assert containers(apply_strategic_merge_patch(pod(), patch, "Pod")) == [
        {"name": "only", "image": "x"}
    ]


def test_env_merges_by_name_and_null_deletes_a_field() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "app", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": None}]}
            ]
        }
    }
    env = containers(apply_strategic_merge_patch(pod(), patch, "Pod"))[0]["env"]
    assert env == [{"name": "B", "value": "2"}, {"name": "A"}]


def test_ports_merge_by_container_port() -> None:
    live = pod()
    live["spec"]["containers"][0]["ports"] = [{"containerPort": 80}, {"containerPort": 443}]
    patch = {
        "spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "http"}]}]}
    }
    ports = containers(apply_strategic_merge_patch(live, patch, "Pod"))[0]["ports"]
    assert ports == [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]


def test_tolerations_are_atomic_and_replaced() -> None:
    live = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    patch = {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}
    patched = apply_strategic_merge_patch(live, patch, "Pod")
    assert patched["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_node_taints_are_atomic_and_replaced() -> None:
    node = {"kind": "Node", "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    patch = {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}
    patched = apply_strategic_merge_patch(node, patch, "Node")
    assert patched["spec"]["taints"] == [{"key": "b", "effect": "NoExecute"}]


def test_node_conditions_merge_by_type() -> None:
    node = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DiskPressure", "status": "False"},
            ]
        }
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    patched = apply_strategic_merge_patch(node, patch, "Node")
    assert patched["status"]["conditions"] == [
        {"type": "Ready", "status": "False"},
        {"type": "DiskPressure", "status": "False"},
    ]


def test_finalizers_merge_as_a_set() -> None:
    patch = {"metadata": {"finalizers": ["c", "a"]}}
    patched = apply_strategic_merge_patch(pod(), patch, "Pod")
    assert patched["metadata"]["finalizers"] == ["c", "a", "b"]


def test_delete_from_primitive_list() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    patched = apply_strategic_merge_patch(pod(), patch, "Pod")
    assert patched["metadata"]["finalizers"] == ["b"]


def test_a_deletion_list_for_a_list_the_object_lacks_adds_nothing() -> None:
    """kubectl apply sends one when a finalizer left the manifest: if a controller already
    removed it from the object, the object must not get it back."""
    live = pod()
    del live["metadata"]["finalizers"]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    assert "finalizers" not in apply_strategic_merge_patch(live, patch, "Pod")["metadata"]


def test_a_deletion_list_for_a_field_that_is_no_list_changes_nothing() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/labels": ["app"]}}
    assert apply_strategic_merge_patch(pod(), patch, "Pod")["metadata"]["labels"] == {"app": "web"}


def test_set_element_order_reorders_the_merged_list() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "nginx:2"}],
        }
    }
    patched = apply_strategic_merge_patch(pod(), patch, "Pod")
    assert [(c["name"], c["image"]) for c in containers(patched)] == [
        ("log", "busybox"),
        ("app", "nginx:2"),
    ]


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": None}]}]}},
        {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}},
        {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}},
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}],
                "containers": [{"name": "app", "image": "nginx:2"}],
            }
        },
        {"spec": {"$retainKeys": ["containers"], "containers": [{"name": "log", "image": "b"}]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "labels": {"app": None}}},
        {"metadata": {"finalizers": ["c"]}, "spec": {"$patch": "replace", "containers": []}},
    ],
)
def test_the_live_object_is_left_as_it_was_and_shared_where_untouched(patch: Any) -> None:
    live = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    before = copy.deepcopy(live)
    patched = apply_strategic_merge_patch(live, patch, "Pod")
    assert live == before
    assert patched["kind"] == "Pod"
    if "metadata" not in patch:
        assert patched["metadata"] is live["metadata"]


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
            },
        },
    }


def test_deployment_replicas_and_template() -> None:
    patch = {
        "spec": {
            "replicas": 5,
            "template": {
                "metadata": {"labels": {"v": "2"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:2"}]},
            },
        }
    }
    spec = apply_strategic_merge_patch(deployment(), patch, "Deployment")["spec"]
    assert spec["replicas"] == 5
    assert spec["template"]["metadata"]["labels"] == {"app": "web", "v": "2"}
    assert spec["template"]["spec"]["containers"] == [{"name": "app", "image": "nginx:2"}]


def test_retain_keys_clears_the_other_strategy_fields() -> None:
    # What kubectl sends to switch a Deployment to Recreate.
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    spec = apply_strategic_merge_patch(deployment(), patch, "Deployment")["spec"]
    assert spec["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_name_every_patched_field() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}
    with pytest.raises(StatusError) as e:
        apply_strategic_merge_patch(deployment(), patch, "Deployment")
    assert (e.value.code, e.value.message) == (400, "invalid patch format of retainKeys")


def test_patch_replace_on_a_map() -> None:
    patch = {"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}}
    spec = apply_strategic_merge_patch(deployment(), patch, "Deployment")["spec"]
    assert spec["strategy"] == {"type": "Recreate"}


def test_null_deletes_a_field() -> None:
    patch = {"spec": {"replicas": None}, "metadata": {"labels": None}}
    patched = apply_strategic_merge_patch(deployment(), patch, "Deployment")
    assert "replicas" not in patched["spec"]


def test_directives_in_new_values_do_not_leak_into_the_object() -> None:
    patch = {"spec": {"template": {"spec": {"securityContext": {"$patch": "delete"}}}}}
    spec = apply_strategic_merge_patch(deployment(), patch, "Deployment")["spec"]
    assert spec["template"]["spec"]["securityContext"] == {}


def test_pdb_selector_is_replaced() -> None:
    pdb = {"spec": {"selector": {"matchLabels": {"a": "1"}}}}
    patch = {"spec": {"selector": {"matchLabels": {"b": "2"}}}}
    patched = apply_strategic_merge_patch(pdb, patch, "PodDisruptionBudget")
    assert patched["spec"]["selector"] == {"matchLabels": {"b": "2"}}


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        ([1], 400, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ({"spec": {"$patch": "bogus"}}, 500, "unknown patch type: bogus in map: map[$patch:bogus]"),
        (
            {"spec": {"containers": [{"image": "x"}]}},
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
            400,
            "invalid patch format of primitive list",
        ),
        (
            {"metadata": {"finalizers": [1]}},
            500,
            "list element types are not identical: [[a b] [1]]",
        ),
    ],
)
def test_errors(patch: Any, code: int, message: str) -> None:
    with pytest.raises(StatusError) as e:
        apply_strategic_merge_patch(pod(), patch, "Pod")
    assert (e.value.code, e.value.message) == (code, message)


def test_a_kind_without_strategies_is_unsupported_media_type() -> None:
    with pytest.raises(StatusError) as e:
        apply_strategic_merge_patch({}, {}, "Widget")
    assert e.value.code == 415


def test_the_inputs_are_left_alone() -> None:
    live, patch = pod(), {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}
    apply_strategic_merge_patch(live, patch, "Pod")
    assert live == pod()
    assert patch == {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}


def test_lists_of_lists_are_the_generic_422() -> None:
    node = {"spec": {"podCIDRs": []}}
    with pytest.raises(StatusError) as e:
        apply_strategic_merge_patch(node, {"spec": {"podCIDRs": [["10.0.0.0/24"]]}}, "Node")
    assert e.value.code == 422
