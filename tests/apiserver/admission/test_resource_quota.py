"""ResourceQuota vectors, checked against kube-apiserver v1.32
(k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go, the pod and object count
evaluators in pkg/quota/v1/evaluator/core and k8s.io/apiserver/pkg/quota/v1/generic) and the
resource quota controller's sync (pkg/controller/resourcequota)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.admission.resource_quota import (
    admit,
    charges_update,
    recalculate,
    tracked_resources,
)
from pinnace.clock.rfc3339 import parse_time


def quota(
    name: str,
    hard: dict[str, str],
    used: dict[str, str] | None = None,
    *,
    scopes: list[str] | None = None,
    selector: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A quota as the controller leaves it: status.hard mirrors spec.hard; `used` None means
    the controller has not measured it yet."""
    spec: dict[str, Any] = {"hard": dict(hard)}
    if scopes:
        spec["scopes"] = scopes
    if selector:
        spec["scopeSelector"] = {"matchExpressions": selector}
    q: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "team", "resourceVersion": "7"},
        "spec": spec,
        "status": {"hard": dict(hard)},
    }
    if used is not None:
        q["status"]["used"] = dict(used)
    return q


def container(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "nginx", "resources": resources}


def pod(
    *containers: dict[str, Any],
    name: str = "web",
    init: tuple[dict[str, Any], ...] = (),
    phase: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": list(containers) or [container("app")], **spec}
    if init:
        body["initContainers"] = list(init)
    p: dict[str, Any] = {"metadata": {"name": name, "namespace": "team"}, "spec": body}
    if phase:
        p["status"] = {"phase": phase}
    return p


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team"}}


def admit_pod(p: dict[str, Any], *quotas: dict[str, Any]) -> list[dict[str, Any]]:
    return admit("pods", "", "CREATE", p, None, list(quotas))


def refusal(
    p: dict[str, Any], *quotas: dict[str, Any], resource: str = "pods", group: str = ""
) -> str:
    before = copy.deepcopy(quotas)
    with pytest.raises(StatusError) as info:
        admit(resource, group, "CREATE", p, None, list(quotas))
    assert (info.value.code, info.value.reason) == (403, "Forbidden")
    assert quotas == before  # a refusal changes no quota
    return info.value.message


def used(q: dict[str, Any]) -> dict[str, str]:
    return q["status"]["used"]


# --- charging and exceeding ---------------------------------------------------------------------


def test_exceeded_quota_names_the_quota_and_what_was_requested_used_and_limited() -> None:
    q = quota("compute", {"limits.memory": "2Gi"}, {"limits.memory": "1Gi"})
    p = pod(container("app", {"memory": "2Gi"}, {"memory": "2Gi"}))
    assert refusal(p, q) == (
        'pods "web" is forbidden: exceeded quota: compute, requested: limits.memory=2Gi, '
        "used: limits.memory=1Gi, limited: limits.memory=2Gi"
    )


def test_only_the_exceeded_resources_are_reported_sorted_by_name() -> None:
    q = quota(
        "compute",
        {"requests.memory": "1Gi", "requests.cpu": "1", "limits.cpu": "4", "pods": "10"},
        {"requests.memory": "512Mi", "requests.cpu": "500m", "limits.cpu": "0", "pods": "1"},
    )
    p = pod(container("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))
    assert refusal(p, q) == (
        'pods "web" is forbidden: exceeded quota: compute, '
        "requested: requests.cpu=1,requests.memory=1Gi, "
        "used: requests.cpu=500m,requests.memory=512Mi, "
        "limited: requests.cpu=1,requests.memory=1Gi"
    )


def test_a_pod_that_fits_is_charged_in_a_new_quota_and_the_input_is_untouched() -> None:
    q = quota(
        "compute",
        {"requests.cpu": "2", "limits.memory": "2Gi", "pods": "2", "count/pods": "5"},
        {"requests.cpu": "1", "limits.memory": "1Gi", "pods": "1", "count/pods": "1"},
    )
    before = copy.deepcopy(q)
    p = pod(container("app", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))
    (charged,) = admit_pod(p, q)
    assert used(charged) == {
        "count/pods": "2",
        "limits.memory": "2Gi",
        "pods": "2",
        "requests.cpu": "1500m",
    }
    assert charged["status"]["hard"] == q["status"]["hard"]
    assert charged["metadata"]["resourceVersion"] == "7"  # the server writes it conditionally
    assert q == before


def test_usage_up_to_the_limit_is_allowed_one_more_is_not() -> None:
    q = quota("pods", {"pods": "2"}, {"pods": "1"})
    (charged,) = admit_pod(pod(), q)
    assert used(charged) == {"pods": "2"}
    assert refusal(pod(name="extra"), charged) == (
        'pods "extra" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, '
        "limited: pods=2"
    )


def test_cpu_and_memory_are_the_old_names_of_the_requests() -> None:
    q = quota("old", {"cpu": "1", "memory": "1Gi"}, {"cpu": "0", "memory": "0"})
    p = pod(container("app", {"cpu": "250m", "memory": "256Mi"}))
    (charged,) = admit_pod(p, q)
    assert used(charged) == {"cpu": "250m", "memory": "256Mi"}
    big = pod(container("app", {"cpu": "2", "memory": "256Mi"}), name="big")
    assert refusal(big, q) == (
        'pods "big" is forbidden: exceeded quota: old, requested: cpu=2, used: cpu=0, '
        "limited: cpu=1"
    )


def test_pods_are_charged_their_effective_requests_init_containers_included() -> None:
    q = quota("compute", {"requests.cpu": "4", "requests.memory": "4Gi"}, {})
    q["status"]["used"] = {"requests.cpu": "0", "requests.memory": "0"}
    p = pod(
        container("app", {"cpu": "500m", "memory": "1Gi"}),
        container("log", {"cpu": "100m", "memory": "64Mi"}),
        init=(container("migrate", {"cpu": "2", "memory": "128Mi"}),),
    )
    (charged,) = admit_pod(p, q)
    assert used(charged) == {"requests.cpu": "2", "requests.memory": "1088Mi"}


def test_ephemeral_storage_and_hugepages_are_charged_without_being_required() -> None:
    hard = {
        "requests.ephemeral-storage": "10Gi",
        "limits.ephemeral-storage": "20Gi",
        "requests.hugepages-2Mi": "1Gi",
        "hugepages-2Mi": "1Gi",
    }
    q = quota("storage", hard, dict.fromkeys(hard, "0"))
    assert admit_pod(pod(), q) == []  # asks for none of them: nothing to charge, nothing missing
    p = pod(
        container(
            "app",
            {"ephemeral-storage": "1Gi", "hugepages-2Mi": "128Mi", "memory": "64Mi"},
            {"ephemeral-storage": "2Gi", "hugepages-2Mi": "128Mi", "memory": "64Mi"},
        )
    )
    (charged,) = admit_pod(p, q)
    assert used(charged) == {
        "hugepages-2Mi": "128Mi",
        "limits.ephemeral-storage": "2Gi",
        "requests.ephemeral-storage": "1Gi",
        "requests.hugepages-2Mi": "128Mi",
    }


def test_extended_resources_are_limited_by_their_requests_name() -> None:
    q = quota("gpu", {"requests.nvidia.com/gpu": "1"}, {"requests.nvidia.com/gpu": "0"})
    assert admit_pod(pod(), q) == []  # extended resources are never required
    one = pod(container("train", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}))
    (charged,) = admit_pod(one, q)
    assert used(charged) == {"requests.nvidia.com/gpu": "1"}
    two = pod(container("train", {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}), name="two")
    assert refusal(two, q) == (
        'pods "two" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, '
        "used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1"
    )


def test_extended_resources_under_any_other_name_are_not_counted() -> None:
    hard = {"nvidia.com/gpu": "0", "limits.nvidia.com/gpu": "0"}
    q = quota("gpu", hard, dict.fromkeys(hard, "0"))
    p = pod(container("train", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}))
    assert admit_pod(p, q) == []
    assert tracked_resources(q) == []


def test_every_matching_quota_is_charged_and_the_first_one_exceeded_refuses() -> None:
    small = quota("small", {"pods": "1"}, {"pods": "1"})
    big = quota("big", {"pods": "10", "requests.cpu": "4"}, {"pods": "3", "requests.cpu": "1"})
    other = quota("objects", {"count/configmaps": "3"}, {"count/configmaps": "0"})
    p = pod(container("app", {"cpu": "1"}))
    charged = admit_pod(p, big, other)
    assert [q["metadata"]["name"] for q in charged] == ["big"]
    assert used(charged[0]) == {"pods": "4", "requests.cpu": "2"}
    assert refusal(p, big, small).startswith('pods "web" is forbidden: exceeded quota: small,')


# --- what a covering quota requires ------------------------------------------------------------


def test_a_quota_on_cpu_or_memory_makes_every_container_state_it() -> None:
    q = quota(
        "compute",
        {"limits.cpu": "4", "requests.memory": "4Gi"},
        {"limits.cpu": "0", "requests.memory": "0"},
    )
    p = pod(
        container("app", {"memory": "1Gi"}),
        container("sidecar", limits={"cpu": "1"}),
        init=(container("init"),),
    )
    assert refusal(p, q) == (
        'pods "web" is forbidden: failed quota: compute: must specify '
        "limits.cpu for: app,init; requests.memory for: init,sidecar"
    )


def test_a_quota_counting_only_pods_requires_no_resources() -> None:
    q = quota("pods", {"pods": "5", "count/pods": "5"}, {"pods": "0", "count/pods": "0"})
    (charged,) = admit_pod(pod(), q)
    assert used(charged) == {"count/pods": "1", "pods": "1"}


def test_a_quota_not_measured_yet_refuses_what_it_would_count() -> None:
    q = quota("compute", {"pods": "5", "limits.memory": "1Gi", "count/configmaps": "2"})
    p = pod(container("app", limits={"memory": "1Gi"}))
    assert refusal(p, q) == (
        'pods "web" is forbidden: status unknown for quota: compute, resources: limits.memory,pods'
    )
    partly = quota("compute", {"pods": "5", "limits.memory": "1Gi"}, {"pods": "0"})
    assert refusal(p, partly).endswith(
        "status unknown for quota: compute, resources: limits.memory,pods"
    )


def test_a_quota_without_status_hard_counts_nothing_yet() -> None:
    q = quota("fresh", {"pods": "0"})
    del q["status"]
    assert admit_pod(pod(), q) == []


def test_an_update_is_charged_only_what_it_adds() -> None:
    q = quota(
        "pods", {"pods": "1", "count/configmaps": "0"}, {"pods": "1", "count/configmaps": "0"}
    )
    assert admit("pods", "", "UPDATE", pod(), pod(), [q]) == []
    assert admit("configmaps", "", "UPDATE", obj("c"), obj("c"), [q]) == []
    assert admit("pods", "", "CREATE", pod(), None, []) == []


def test_the_updates_charged_are_resizes_and_services_and_claims_own_writes() -> None:
    assert charges_update("pods", "", "resize")
    assert not charges_update("pods", "", "")
    assert charges_update("services", "", "")
    assert charges_update("persistentvolumeclaims", "", "")
    assert not charges_update("persistentvolumeclaims", "", "status")
    assert not charges_update("configmaps", "", "")
    assert not charges_update("deployments", "apps", "")


def service(kind: str, ports: int) -> dict[str, Any]:
    spec = {"type": kind, "ports": [{"port": 80 + i} for i in range(ports)]}
    return {"metadata": {"name": "web", "namespace": "team"}, "spec": spec}


def test_a_service_turned_load_balancer_is_charged_what_its_type_adds() -> None:
    q = quota(
        "ports",
        {"services": "1", "services.loadbalancers": "1", "services.nodeports": "2"},
        {"services": "1", "services.loadbalancers": "0", "services.nodeports": "0"},
    )
    before, after = service("ClusterIP", 2), service("LoadBalancer", 2)
    charged = admit("services", "", "UPDATE", after, before, [q])
    assert used(charged[0]) == {
        "services": "1",
        "services.loadbalancers": "1",
        "services.nodeports": "2",
    }
    with pytest.raises(StatusError) as e:
        admit("services", "", "UPDATE", service("NodePort", 3), before, [q])
    assert str(e.value) == (
        'services "web" is forbidden: exceeded quota: ports, requested: services.nodeports=3, '
        "used: services.nodeports=0, limited: services.nodeports=2"
    )
    assert admit("services", "", "UPDATE", before, after, [q]) == []  # nothing freed here


def test_a_claims_larger_request_is_charged_the_difference() -> None:
    def claim(storage: str) -> dict[str, Any]:
        spec = {"resources": {"requests": {"storage": storage}}}
        return {"metadata": {"name": "data", "namespace": "team"}, "spec": spec}

    q = quota("storage", {"requests.storage": "10Gi"}, {"requests.storage": "4Gi"})
    charged = admit("persistentvolumeclaims", "", "UPDATE", claim("7Gi"), claim("4Gi"), [q])
    assert used(charged[0]) == {"requests.storage": "7Gi"}


# --- scopes ------------------------------------------------------------------------------------


def test_terminating_scopes_follow_active_deadline_seconds() -> None:
    terminating = quota("batch", {"pods": "5"}, {"pods": "0"}, scopes=["Terminating"])
    long_running = quota("serving", {"pods": "5"}, {"pods": "0"}, scopes=["NotTerminating"])
    job = pod(activeDeadlineSeconds=600)
    server = pod()
    assert [q["metadata"]["name"] for q in admit_pod(job, terminating, long_running)] == ["batch"]
    assert [q["metadata"]["name"] for q in admit_pod(server, terminating, long_running)] == [
        "serving"
    ]


def test_best_effort_scopes_follow_the_qos_class() -> None:
    best_effort = quota("free", {"pods": "5"}, {"pods": "0"}, scopes=["BestEffort"])
    paid = quota("paid", {"pods": "5"}, {"pods": "0"}, scopes=["NotBestEffort"])
    burstable = pod(container("app", {"cpu": "100m"}))
    assert [q["metadata"]["name"] for q in admit_pod(pod(), best_effort, paid)] == ["free"]
    assert [q["metadata"]["name"] for q in admit_pod(burstable, best_effort, paid)] == ["paid"]


def test_a_priority_class_scope_selector_matches_the_pods_class() -> None:
    selector = [{"scopeName": "PriorityClass", "operator": "In", "values": ["high", "urgent"]}]
    high = quota("high", {"pods": "1"}, {"pods": "1"}, selector=selector)
    assert admit_pod(pod(priorityClassName="low"), high) == []
    assert admit_pod(pod(), high) == []
    assert refusal(pod(priorityClassName="urgent"), high).startswith(
        'pods "web" is forbidden: exceeded quota: high, requested: pods=1'
    )


@pytest.mark.parametrize(
    ("operator", "values", "charged_classes"),
    [
        ("Exists", None, ["low", "high"]),
        ("DoesNotExist", None, [""]),
        ("NotIn", ["high"], ["", "low"]),
    ],
)
def test_priority_class_scope_operators(
    operator: str, values: list[str] | None, charged_classes: list[str]
) -> None:
    expression: dict[str, Any] = {"scopeName": "PriorityClass", "operator": operator}
    if values:
        expression["values"] = values
    q = quota("prio", {"pods": "9"}, {"pods": "0"}, selector=[expression])
    charged = [
        name
        for name in ("", "low", "high")
        if admit_pod(pod(priorityClassName=name) if name else pod(), q)
    ]
    assert charged == charged_classes


def test_all_of_a_quotas_scopes_must_match() -> None:
    q = quota(
        "batch-free",
        {"pods": "5"},
        {"pods": "0"},
        scopes=["Terminating", "BestEffort"],
    )
    assert admit_pod(pod(activeDeadlineSeconds=60), q) != []
    assert admit_pod(pod(), q) == []
    assert admit_pod(pod(container("a", {"cpu": "1"}), activeDeadlineSeconds=60), q) == []


def test_a_quota_whose_scope_excludes_the_pod_requires_nothing_of_it() -> None:
    q = quota("free", {"limits.cpu": "1"}, {"limits.cpu": "0"}, scopes=["Terminating"])
    assert admit_pod(pod(), q) == []


# --- object counts -----------------------------------------------------------------------------


def test_object_counts_limit_any_kind_by_count_and_group() -> None:
    q = quota(
        "objects",
        {"count/configmaps": "2", "count/deployments.apps": "1"},
        {"count/configmaps": "1", "count/deployments.apps": "1"},
    )
    (charged,) = admit("configmaps", "", "CREATE", obj("settings"), None, [q])
    assert used(charged) == {"count/configmaps": "2", "count/deployments.apps": "1"}
    assert refusal(obj("web"), q, resource="deployments", group="apps") == (
        'deployments.apps "web" is forbidden: exceeded quota: objects, '
        "requested: count/deployments.apps=1, used: count/deployments.apps=1, "
        "limited: count/deployments.apps=1"
    )


def test_configmaps_and_secrets_keep_their_old_unprefixed_quota_names() -> None:
    q = quota(
        "objects",
        {"configmaps": "1", "secrets": "3"},
        {"configmaps": "1", "secrets": "0"},
    )
    (charged,) = admit("secrets", "", "CREATE", obj("token"), None, [q])
    assert used(charged) == {"configmaps": "1", "secrets": "1"}
    assert refusal(obj("settings"), q, resource="configmaps") == (
        'configmaps "settings" is forbidden: exceeded quota: objects, requested: configmaps=1, '
        "used: configmaps=1, limited: configmaps=1"
    )


def test_count_pods_counts_the_pod_object() -> None:
    q = quota("objects", {"count/pods": "1"}, {"count/pods": "1"})
    assert refusal(pod(), q) == (
        'pods "web" is forbidden: exceeded quota: objects, requested: count/pods=1, '
        "used: count/pods=1, limited: count/pods=1"
    )


def test_scoped_quotas_never_count_other_kinds() -> None:
    q = quota("scoped", {"count/configmaps": "0"}, {"count/configmaps": "0"}, scopes=["BestEffort"])
    assert admit("configmaps", "", "CREATE", obj("settings"), None, [q]) == []


def test_events_and_virtual_resources_are_never_counted() -> None:
    q = quota("objects", {"count/events": "0"}, {"count/events": "0"})
    assert admit("events", "", "CREATE", obj("e"), None, [q]) == []
    assert admit("events", "events.k8s.io", "CREATE", obj("e"), None, [q]) == []


# --- recalculation (the resource quota controller) ---------------------------------------------


def test_recalculate_mirrors_spec_hard_and_measures_used_from_the_objects() -> None:
    q = quota("compute", {"pods": "5"}, {"pods": "3", "configmaps": "9"})
    q["spec"]["hard"] = {"pods": "10", "requests.cpu": "4", "count/configmaps": "5"}
    pods = [
        pod(container("app", {"cpu": "500m"}), name="a"),
        pod(container("app", {"cpu": "1"}), name="b"),
    ]
    updated = recalculate(q, {"pods": pods, "configmaps": [obj("x")]})
    assert updated["status"] == {
        "hard": {"count/configmaps": "5", "pods": "10", "requests.cpu": "4"},
        "used": {"count/configmaps": "1", "pods": "2", "requests.cpu": "1500m"},
    }
    assert q["status"]["used"] == {"pods": "3", "configmaps": "9"}  # the input is untouched


def test_recalculate_counts_zero_for_kinds_without_objects() -> None:
    q = quota("fresh", {"pods": "5", "limits.memory": "1Gi", "count/secrets": "3"})
    del q["status"]
    updated = recalculate(q, {"pods": [], "secrets": []})
    assert updated["status"]["used"] == {"count/secrets": "0", "limits.memory": "0", "pods": "0"}


def test_recalculate_keeps_the_old_usage_of_kinds_it_was_not_given() -> None:
    q = quota(
        "objects",
        {"count/configmaps": "5", "pods": "5"},
        {"count/configmaps": "2", "pods": "4"},
    )
    updated = recalculate(q, {"pods": [pod()]})
    assert updated["status"]["used"] == {"count/configmaps": "2", "pods": "1"}


def test_finished_pods_count_in_count_pods_but_not_in_pods_or_compute() -> None:
    q = quota(
        "compute",
        {"pods": "5", "count/pods": "5", "requests.memory": "4Gi"},
        {"pods": "0", "count/pods": "0", "requests.memory": "0"},
    )
    pods = [
        pod(container("app", {"memory": "1Gi"}), name="running", phase="Running"),
        pod(container("app", {"memory": "1Gi"}), name="done", phase="Succeeded"),
        pod(container("app", {"memory": "1Gi"}), name="crashed", phase="Failed"),
    ]
    assert recalculate(q, {"pods": pods})["status"]["used"] == {
        "count/pods": "3",
        "pods": "1",
        "requests.memory": "1Gi",
    }


def test_pods_deleted_past_their_grace_period_stop_counting() -> None:
    q = quota("pods", {"pods": "5", "count/pods": "5"}, {"pods": "0", "count/pods": "0"})
    stuck = pod(name="stuck")
    stuck["metadata"].update(
        deletionTimestamp="2026-01-01T00:00:30Z", deletionGracePeriodSeconds=30
    )
    deleted_at = parse_time("2026-01-01T00:00:30Z")
    during = recalculate(q, {"pods": [stuck]}, now=deleted_at + 30)
    after = recalculate(q, {"pods": [stuck]}, now=deleted_at + 31)
    assert during["status"]["used"] == {"count/pods": "1", "pods": "1"}
    assert after["status"]["used"] == {"count/pods": "1", "pods": "0"}


def test_recalculate_counts_only_pods_in_the_quotas_scopes() -> None:
    q = quota("free", {"pods": "5"}, {"pods": "0"}, scopes=["BestEffort"])
    pods = [pod(name="a"), pod(container("app", {"cpu": "1"}), name="b"), pod(name="c")]
    assert recalculate(q, {"pods": pods})["status"]["used"] == {"pods": "2"}


def test_recalculate_sums_extended_resource_requests() -> None:
    q = quota("gpu", {"requests.nvidia.com/gpu": "4"})
    pods = [
        pod(container("a", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}), name="a"),
        pod(container("b", {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}), name="b"),
        pod(name="cpu-only"),
    ]
    assert recalculate(q, {"pods": pods})["status"]["used"] == {"requests.nvidia.com/gpu": "3"}


def test_tracked_resources_name_the_kinds_a_quota_counts() -> None:
    q = quota(
        "mixed",
        {
            "requests.nvidia.com/gpu": "1",
            "count/pods": "3",
            "configmaps": "1",
            "count/deployments.apps": "2",
            "count/events": "9",
            "secrets": "2",
        },
    )
    assert tracked_resources(q) == ["apps/deployments", "configmaps", "pods", "secrets"]


def test_a_quota_on_storage_alone_counts_the_claims() -> None:
    """Without `persistentvolumeclaims` among its resources, a quota of `requests.storage`
    or of a storage class's resources still needs the claims measured (else its usage stays
    unknown and every claim is refused)."""
    q = quota(
        "storage",
        {"requests.storage": "5Gi", "gold.storageclass.storage.k8s.io/requests.storage": "1Gi"},
    )
    assert tracked_resources(q) == ["persistentvolumeclaims"]
