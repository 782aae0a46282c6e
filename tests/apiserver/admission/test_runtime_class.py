"""RuntimeClass admission, checked against kube-apiserver v1.32
(plugin/pkg/admission/runtimeclass/admission.go, pkg/util/tolerations): the plugin's vectors,
then what a client of the in-process API server sees."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.runtime_class import admit_pod, merge_tolerations, validate_pod

PODS = catalog.kind("", "pods")
RUNTIME_CLASSES = catalog.kind("node.k8s.io", "runtimeclasses")
QUOTAS = catalog.kind("", "resourcequotas")
LIMIT_RANGES = catalog.kind("", "limitranges")

OVERHEAD = {"memory": "120Mi", "cpu": "250m"}


def runtime_class(name: str = "kata-fc", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": name,
        **fields,
    }


def pod(name: str = "test-pod", **spec: Any) -> dict[str, Any]:
    limits = {"cpu": "500m", "memory": "100Mi"}
    containers = [
        {"name": n, "image": "nginx", "resources": {"limits": limits}} for n in ("a", "b")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers, **spec},
    }


def refusal(fn: Any, *args: Any) -> str:
    with pytest.raises(StatusError) as info:
        fn(*args)
    assert (info.value.code, info.value.reason) == (403, "Forbidden")
    return info.value.message


def toleration(key: str, effect: str = "", operator: str = "Exists", **more: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator, "effect": effect, **more}


# --- the plugin ---------------------------------------------------------------------------


def test_a_missing_class_is_refused() -> None:
    p = pod(runtimeClassName="kata-fc")
    expected = 'pods "test-pod" is forbidden: pod rejected: RuntimeClass "kata-fc" not found'
    assert refusal(admit_pod, p, None) == expected
    assert refusal(validate_pod, p, None) == expected


def test_a_pod_naming_no_class_is_left_alone() -> None:
    p = pod()
    admit_pod(p, None)
    validate_pod(p, None)
    assert "overhead" not in p["spec"]


def test_the_class_overhead_becomes_the_pods() -> None:
    p = pod(runtimeClassName="kata-fc")
    rc = runtime_class(overhead={"podFixed": OVERHEAD})
    admit_pod(p, rc)
    assert p["spec"]["overhead"] == OVERHEAD
    validate_pod(p, rc)


def test_a_pod_may_carry_only_its_class_overhead() -> None:
    rc = runtime_class(overhead={"podFixed": OVERHEAD})
    same = pod(runtimeClassName="kata-fc", overhead={"cpu": "0.25", "memory": "120Mi"})
    admit_pod(same, rc)  # equal quantities, written differently
    other = pod(runtimeClassName="kata-fc", overhead={"cpu": "1"})
    mismatch = (
        "pods \"test-pod\" is forbidden: pod rejected: Pod's Overhead doesn't match "
        "RuntimeClass's defined Overhead"
    )
    assert refusal(admit_pod, other, rc) == mismatch
    assert refusal(validate_pod, other, rc) == mismatch
    assert refusal(validate_pod, pod(overhead={"cpu": "1"}), None) == (
        'pods "test-pod" is forbidden: pod rejected: Pod Overhead set without corresponding '
        "RuntimeClass defined Overhead"
    )


def test_a_class_without_overhead_leaves_the_pods_as_it_is() -> None:
    p = pod(runtimeClassName="runc")
    admit_pod(p, runtime_class("runc"))
    assert "overhead" not in p["spec"]


def test_node_selector_is_merged_and_a_conflict_refused() -> None:
    rc = runtime_class(scheduling={"nodeSelector": {"sandbox": "kata", "zone": "a"}})
    p = pod(runtimeClassName="kata-fc", nodeSelector={"disk": "ssd", "zone": "a"})
    admit_pod(p, rc)
    assert p["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a", "sandbox": "kata"}
    bare = pod(runtimeClassName="kata-fc")
    admit_pod(bare, rc)
    assert bare["spec"]["nodeSelector"] == {"sandbox": "kata", "zone": "a"}
    conflicting = pod(runtimeClassName="kata-fc", nodeSelector={"zone": "b"})
    assert refusal(admit_pod, conflicting, rc) == (
        'pods "test-pod" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[zone] = a; '
        "pod.spec.nodeSelector[zone] = b"
    )


def test_class_tolerations_are_appended() -> None:
    kata = toleration("sandbox", "NoSchedule")
    rc = runtime_class(scheduling={"tolerations": [kata]})
    own = toleration("gpu", "NoSchedule")
    p = pod(runtimeClassName="kata-fc", tolerations=[own])
    admit_pod(p, rc)
    assert p["spec"]["tolerations"] == [own, kata]


def test_merging_keeps_only_the_wider_of_two_tolerations() -> None:
    # pkg/util/tolerations' MergeTolerations vectors: a toleration another one covers goes.
    every_key = {"operator": "Exists"}
    assert merge_tolerations([toleration("a")], [every_key]) == [every_key]
    narrow = toleration("a", "NoSchedule", operator="Equal", value="x")
    wide = toleration("a", "NoSchedule")
    assert merge_tolerations([narrow], [wide]) == [wide]
    assert merge_tolerations([wide], [narrow]) == [wide]
    short = toleration("a", "NoExecute", tolerationSeconds=10)
    long = toleration("a", "NoExecute", tolerationSeconds=100)
    assert merge_tolerations([short], [long]) == [long]
    assert merge_tolerations([wide, dict(wide)], []) == [wide]
    other_effect = toleration("a", "NoExecute")
    assert merge_tolerations([wide], [other_effect]) == [wide, other_effect]


# --- through the API server -------------------------------------------------------------------


def test_the_pipeline_refuses_a_pod_of_a_missing_class(api: Any) -> None:
    with pytest.raises(StatusError) as info:
        api.call(api.server.create, PODS, "default", pod(runtimeClassName="kata-fc"))
    assert info.value.code == 403
    assert info.value.message == (
        'pods "test-pod" is forbidden: pod rejected: RuntimeClass "kata-fc" not found'
    )


def test_the_pipeline_sets_overhead_and_scheduling_after_the_default_tolerations(
    api: Any,
) -> None:
    kata = toleration("sandbox", "NoSchedule")
    rc = runtime_class(
        overhead={"podFixed": OVERHEAD},
        scheduling={"nodeSelector": {"sandbox": "kata"}, "tolerations": [kata]},
    )
    api.call(api.server.create, RUNTIME_CLASSES, "", rc)
    created = api.call(api.server.create, PODS, "default", pod(runtimeClassName="kata-fc")).obj
    spec = created["spec"]
    assert spec["overhead"] == OVERHEAD
    assert spec["nodeSelector"] == {"sandbox": "kata"}
    keys = [t["key"] for t in spec["tolerations"]]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "sandbox"]


def test_quota_counts_overhead_and_limit_ranges_do_not(api: Any) -> None:
    api.call(
        api.server.create,
        RUNTIME_CLASSES,
        "",
        runtime_class(overhead={"podFixed": OVERHEAD}),
    )
    per_pod = {"type": "Pod", "max": {"cpu": "1", "memory": "200Mi"}}
    limit_range = {"metadata": {"name": "l"}, "spec": {"limits": [per_pod]}}
    api.call(api.server.create, LIMIT_RANGES, "default", limit_range)
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"requests.cpu": "2", "limits.cpu": "2"}}}
    api.call(api.server.create, QUOTAS, "default", quota)
    api.call(api.server.create, PODS, "default", pod(runtimeClassName="kata-fc"))
    used = api.call(api.server.get, QUOTAS, "default", "q")["status"]["used"]
    assert used == {"requests.cpu": "1250m", "limits.cpu": "1250m"}
