"""Server-side apply as kube-apiserver v1.32 does it: ownership, pruning of what an applier
stops setting, list merging by key, conflicts and force."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pinnace.api.patch import server_side_apply, track_update
from pinnace.api.status import StatusError

T0, T1, T2, T3 = (f"2026-01-01T00:00:0{n}Z" for n in range(4))


def deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
            },
        },
    }
    base["spec"].update(spec)
    return base


def ssa(
    live: dict[str, Any] | None,
    config: Any,
    *,
    manager: str = "kubectl",
    now: str,
    force: bool = False,
) -> dict[str, Any]:
    return server_side_apply(live, config, manager=manager, force=force, now=now)


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def scaled(obj: dict[str, Any], replicas: int, manager: str, now: str) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["spec"]["replicas"] = replicas
    return track_update(obj, new, manager=manager, now=now)


def test_apply_creates_the_object_owned_by_the_applier() -> None:
    created = ssa(None, deployment(replicas=2), now=T0)
    assert created["spec"]["replicas"] == 2
    assert containers(created) == [{"name": "nginx", "image": "nginx:1.25"}]
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        },
                    },
                },
            },
        }
    ]


def test_apply_accepts_a_yaml_body() -> None:
    body = b"""
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast}
"""
    created = ssa(None, body, now=T0)
    assert created["data"] == {"mode": "fast"}
    assert entries(created)["kubectl"]["fieldsV1"] == {"f:data": {"f:mode": {}}}


def test_reapplying_without_a_field_removes_it() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    again = ssa(live, deployment(), now=T1)
    assert "replicas" not in again["spec"]
    assert "f:replicas" not in entries(again)["kubectl"]["fieldsV1"]["f:spec"]
    assert entries(again)["kubectl"]["time"] == T1


def test_reapplying_the_same_configuration_changes_nothing() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    again = ssa(live, deployment(replicas=2), now=T1)
    assert again == live


def test_a_field_two_managers_share_survives_one_of_them_dropping_it() -> None:
    live = ssa(None, deployment(replicas=2), manager="alice", now=T0)
    shared = ssa(live, deployment(replicas=2), manager="bob", now=T1)
    assert "f:replicas" in entries(shared)["alice"]["fieldsV1"]["f:spec"]
    assert "f:replicas" in entries(shared)["bob"]["fieldsV1"]["f:spec"]

    dropped = ssa(shared, deployment(), manager="alice", now=T2)
    assert dropped["spec"]["replicas"] == 2
    assert "f:replicas" in entries(dropped)["bob"]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entries(dropped)["alice"]["fieldsV1"]["f:spec"]


def test_changing_a_field_another_manager_owns_is_a_conflict() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    live = scaled(live, 5, "kubectl-client-side-apply", T1)
    with pytest.raises(StatusError) as failure:
        ssa(live, deployment(replicas=3), now=T2)
    assert failure.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
        "using apps/v1: .spec.replicas",
        "reason": "Conflict",
        "code": 409,
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                    "field": ".spec.replicas",
                }
            ]
        },
    }


def test_conflicts_with_several_managers_are_listed_by_manager() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    live = scaled(live, 5, "hpa", T1)
    edited = copy.deepcopy(live)
    containers(edited)[0]["image"] = "nginx:1.26"
    edited["spec"]["paused"] = True
    live = track_update(live, edited, manager="kubectl-edit", now=T2)

    config = deployment(replicas=3, paused=False)
    containers(config)[0]["image"] = "nginx:1.27"
    with pytest.raises(StatusError) as failure:
        ssa(live, config, manager="ci", now=T3)
    assert failure.value.code == 409
    assert failure.value.message == (
        "Apply failed with 3 conflicts: "
        'conflicts with "hpa" using apps/v1:\n'
        "- .spec.replicas\n"
        'conflicts with "kubectl-edit" using apps/v1:\n'
        "- .spec.paused\n"
        '- .spec.template.spec.containers[name="nginx"].image'
    )
    assert [c["field"] for c in failure.value.details["causes"]] == [
        ".spec.replicas",
        ".spec.paused",
        '.spec.template.spec.containers[name="nginx"].image',
    ]


def test_a_conflict_with_a_status_writer_names_the_subresource() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    live = ssa(None, pod, now=T0)
    status = {**copy.deepcopy(pod), "status": {"phase": "Pending"}}
    live = server_side_apply(
        live, status, manager="kubelet", force=False, now=T1, subresource="status"
    )
    assert entries(live)["kubelet"]["subresource"] == "status"
    assert entries(live)["kubelet"]["fieldsV1"] == {"f:status": {"f:phase": {}}}

    with pytest.raises(StatusError) as failure:
        server_side_apply(
            live,
            {**copy.deepcopy(pod), "status": {"phase": "Running"}},
            manager="other",
            force=False,
            now=T2,
            subresource="status",
        )
    assert failure.value.message == (
        'Apply failed with 1 conflict: conflict with "kubelet" with subresource "status": '
        ".status.phase"
    )


def test_force_takes_ownership() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    live = scaled(live, 5, "hpa", T1)
    forced = ssa(live, deployment(replicas=3), manager="kubectl", now=T2, force=True)
    assert forced["spec"]["replicas"] == 3
    assert "f:replicas" in entries(forced)["kubectl"]["fieldsV1"]["f:spec"]
    assert "hpa" not in entries(forced)  # it owned nothing else


def test_setting_the_same_value_another_manager_owns_is_no_conflict() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    live = scaled(live, 5, "hpa", T1)
    shared = ssa(live, deployment(replicas=5), now=T2)
    assert "f:replicas" in entries(shared)["hpa"]["fieldsV1"]["f:spec"]
    assert "f:replicas" in entries(shared)["kubectl"]["fieldsV1"]["f:spec"]


def test_list_items_merge_by_key_and_each_applier_keeps_its_own() -> None:
    live = ssa(None, deployment(), now=T0)
    sidecar = deployment()
    containers(sidecar)[:] = [
        {"name": "proxy", "image": "envoy", "ports": [{"containerPort": 9901}]},
    ]
    live = ssa(live, sidecar, manager="mesh", now=T1)
    assert [c["name"] for c in containers(live)] == ["nginx", "proxy"]

    config = deployment()
    containers(config)[0]["env"] = [{"name": "MODE", "value": "fast"}]
    live = ssa(live, config, now=T2)
    assert containers(live)[0]["env"] == [{"name": "MODE", "value": "fast"}]
    assert containers(live)[1]["ports"] == [{"containerPort": 9901}]
    mesh = entries(live)["mesh"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert mesh['k:{"name":"proxy"}']["f:ports"] == {
        'k:{"containerPort":9901,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }

    without_env = ssa(live, deployment(), now=T3)
    assert "env" not in containers(without_env)[0]
    assert [c["name"] for c in containers(without_env)] == ["nginx", "proxy"]


def test_an_applier_dropping_a_list_item_removes_only_that_item() -> None:
    two = deployment()
    containers(two).append({"name": "log", "image": "fluentbit"})
    live = ssa(None, two, now=T0)
    one = ssa(live, deployment(), now=T1)
    assert containers(one) == [{"name": "nginx", "image": "nginx:1.25"}]


def test_atomic_lists_are_replaced_whole() -> None:
    config = deployment()
    containers(config)[0]["args"] = ["--a", "--b"]
    live = ssa(None, config, now=T0)
    containers(config)[0]["args"] = ["--c"]
    again = ssa(live, config, now=T1)
    assert containers(again)[0]["args"] == ["--c"]
    owned = entries(again)["kubectl"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    assert owned["f:containers"]['k:{"name":"nginx"}']["f:args"] == {}


def test_labels_merge_per_key() -> None:
    config = deployment()
    config["metadata"]["labels"] = {"app": "web"}
    live = ssa(None, config, now=T0)
    other = deployment()
    other["metadata"]["labels"] = {"team": "a"}
    live = ssa(live, other, manager="labeler", now=T1)
    assert live["metadata"]["labels"] == {"app": "web", "team": "a"}
    live = ssa(live, deployment(), now=T2)
    assert live["metadata"]["labels"] == {"team": "a"}


def test_fields_set_by_an_update_are_not_pruned_by_an_applier() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    edited = copy.deepcopy(live)
    edited["spec"]["minReadySeconds"] = 10
    live = track_update(live, edited, manager="kubectl-edit", now=T1)
    again = ssa(live, deployment(replicas=2), now=T2)
    assert again["spec"]["minReadySeconds"] == 10


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}, None),
        ({"apiVersion": "v1", "kind": "Deployment"}, "invalid object type: /v1, Kind=Deployment"),
        ({"kind": "Deployment"}, "invalid object type: /, Kind=Deployment"),
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "managedFields": []},
            },
            "metadata.managedFields must be nil",
        ),
        (b"- a\n- b\n", "error decoding YAML: json: cannot unmarshal array into Go value"),
    ],
)
def test_bad_bodies_are_bad_requests(body: Any, message: str | None) -> None:
    live = ssa(None, deployment(), now=T0)
    if message is None:
        ssa(live, body, now=T1)
        return
    with pytest.raises(StatusError) as failure:
        ssa(live, body, now=T1)
    assert (failure.value.code, failure.value.reason) == (400, "BadRequest")
    assert failure.value.message.startswith(message)


def test_an_undeclared_field_fails_as_kube_apiserver_fails_it() -> None:
    config = deployment()
    config["spec"]["replicaz"] = 3
    with pytest.raises(StatusError) as failure:
        ssa(None, config, now=T0)
    assert failure.value.code == 500
    assert failure.value.message == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
        ".spec.replicaz: field not declared in schema"
    )


def test_inputs_are_left_alone() -> None:
    live = ssa(None, deployment(replicas=2), now=T0)
    before = copy.deepcopy(live)
    config = deployment(replicas=4)
    ssa(live, config, now=T1)
    assert live == before
    assert config == deployment(replicas=4)


def test_kubectl_keeps_a_client_side_apply_annotation_in_step() -> None:
    annotation = "kubectl.kubernetes.io/last-applied-configuration"
    live = track_update(None, deployment(replicas=2), manager="kubectl-client-side-apply", now=T0)
    live["metadata"]["annotations"] = {annotation: "{}\n"}
    config = deployment(replicas=2)
    config["metadata"]["labels"] = {"a": "<b>"}
    after = ssa(live, config, now=T1)
    assert after["metadata"]["annotations"][annotation] == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"a":"\\u003cb\\u003e"},'
        '"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":'
        '{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":'
        '[{"image":"nginx:1.25","name":"nginx"}]}}}}\n'
    )
    other = ssa(live, config, manager="argocd", now=T1)
    assert other["metadata"]["annotations"][annotation] == "{}\n"


def test_kubectl_takes_over_what_its_client_side_apply_set_without_conflicts() -> None:
    annotation = "kubectl.kubernetes.io/last-applied-configuration"
    csa = deployment(replicas=2)
    csa["metadata"]["annotations"] = {annotation: json.dumps(deployment(replicas=2))}
    live = track_update(None, csa, manager="kubectl-client-side-apply", now=T0)

    after = ssa(live, deployment(replicas=3), now=T1)
    assert after["spec"]["replicas"] == 3
    assert "f:replicas" in entries(after)["kubectl"]["fieldsV1"]["f:spec"]

    # Changed since by someone else: no longer what client-side apply set, so a conflict.
    live = scaled(live, 7, "kubectl-client-side-apply", T1)
    with pytest.raises(StatusError) as failure:
        ssa(live, deployment(replicas=3), now=T2)
    assert failure.value.details["causes"][0]["field"] == ".spec.replicas"
    with pytest.raises(StatusError):
        ssa(live, deployment(replicas=3), manager="other", now=T2)
