"""Pod updates and status updates: what may change, and the messages when it may not."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api.core.pod import POD, prepare_pod_for_status_update

FORBIDDEN = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def stored(**spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "1", "uid": "u-1"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.26"}], **spec},
    }
    POD.default(pod)
    POD.prepare_for_create(pod)
    return pod


def update_errors(old: dict[str, Any], change: Any) -> list[str]:
    new = copy.deepcopy(old)
    change(new["spec"])
    POD.default(new)
    POD.prepare_for_update(new, old)
    return [str(e) for e in POD.validate_update(new, old)]


def test_image_may_change_other_fields_may_not() -> None:
    old = stored()
    assert update_errors(old, lambda s: s["containers"][0].update(image="nginx:1.27")) == []
    assert update_errors(
        old, lambda s: s["containers"][0].update(ports=[{"containerPort": 80}])
    ) == [FORBIDDEN]
    assert update_errors(old, lambda s: s["containers"].append({"name": "b", "image": "x"})) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]


def test_active_deadline_may_only_shrink() -> None:
    old = stored()
    assert update_errors(old, lambda s: s.update(activeDeadlineSeconds=60)) == []
    limited = stored(activeDeadlineSeconds=60)
    assert update_errors(limited, lambda s: s.update(activeDeadlineSeconds=30)) == []
    assert update_errors(limited, lambda s: s.update(activeDeadlineSeconds=90)) == [
        "spec.activeDeadlineSeconds: Invalid value: 90: "
        "must be less than or equal to previous value"
    ]
    assert update_errors(limited, lambda s: s.pop("activeDeadlineSeconds")) == [
        'spec.activeDeadlineSeconds: Invalid value: "null": '
        "must not update from a positive integer to nil value"
    ]


def test_tolerations_may_only_be_added() -> None:
    tol = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    old = stored(tolerations=[tol])
    extra = {"key": "other", "operator": "Exists"}
    assert update_errors(old, lambda s: s["tolerations"].append(extra)) == []
    assert update_errors(old, lambda s: s["tolerations"][0].update(tolerationSeconds=5)) == []
    assert update_errors(old, lambda s: s["tolerations"][0].update(key="changed")) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ]


def test_scheduling_gates_may_only_be_removed() -> None:
    old = stored(schedulingGates=[{"name": "example.com/a"}])
    assert update_errors(old, lambda s: s.pop("schedulingGates")) == []
    assert update_errors(old, lambda s: s["schedulingGates"].append({"name": "example.com/b"})) == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new "
        "scheduling gate 'example.com/b'"
    ]


def test_node_constraints_may_grow_while_gated() -> None:
    gated = stored(schedulingGates=[{"name": "example.com/a"}], nodeSelector={"disk": "ssd"})
    assert update_errors(gated, lambda s: s["nodeSelector"].update(zone="a")) == []
    assert update_errors(gated, lambda s: s["nodeSelector"].update(disk="hdd")) == [
        'spec.nodeSelector: Invalid value: map[disk:"hdd"]: only additions to '
        "spec.nodeSelector are allowed (no mutations or deletions)"
    ]
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    assert (
        update_errors(
            gated,
            lambda s: s.update(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [term]
                        }
                    }
                }
            ),
        )
        == []
    )
    free = stored(nodeSelector={"disk": "ssd"})
    assert update_errors(free, lambda s: s["nodeSelector"].update(zone="a")) == [FORBIDDEN]


def test_negative_grace_period_may_become_one() -> None:
    old = stored(terminationGracePeriodSeconds=-1)
    assert update_errors(old, lambda s: s.update(terminationGracePeriodSeconds=1)) == []
    assert update_errors(old, lambda s: s.update(terminationGracePeriodSeconds=5)) == [FORBIDDEN]


def test_spec_writes_keep_the_status() -> None:
    old = stored()
    old["status"] = {"phase": "Running", "qosClass": "BestEffort"}
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Failed"}
    POD.prepare_for_update(new, old)
    assert new["status"] == {"phase": "Running", "qosClass": "BestEffort"}


def status_errors(old: dict[str, Any], change: Any) -> list[str]:
    new = copy.deepcopy(old)
    change(new)
    prepare_pod_for_status_update(new, old)
    return [str(e) for e in POD.validate_status_update(new, old)]


def test_status_writes_keep_the_spec_and_qos_class() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "evil"
    new["status"] = {"phase": "Running"}
    prepare_pod_for_status_update(new, old)
    assert new["spec"] == old["spec"]
    assert new["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    assert status_errors(old, lambda p: p["status"].update(qosClass="Guaranteed")) == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable'
    ]


def test_status_conditions_and_ips() -> None:
    old = stored()
    assert (
        status_errors(
            old,
            lambda p: p["status"].update(
                conditions=[
                    {"type": "Ready", "status": "True"},
                    {"type": "example.com/ok", "status": "True"},
                ],
                podIPs=[{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
            ),
        )
        == []
    )
    messages = status_errors(
        old,
        lambda p: p["status"].update(
            conditions=[{"type": "bad type!", "status": "True"}],
            podIPs=[{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
        ),
    )
    assert messages[0].startswith('metadata.conditions[0].Type: Invalid value: "bad type!"')
    assert messages[1] == (
        'status.podIPs: Invalid value: [map[ip:"10.0.0.1"] map[ip:"10.0.0.2"]]: '
        "may specify no more than one IP for each IP family"
    )
    for _ in range(2):  # the second time, the addresses are known
        assert (
            status_errors(
                old,
                lambda p: p["status"].update(hostIP="10.0.0.9", hostIPs=[{"ip": "10.0.0.9"}]),
            )
            == []
        )
        assert status_errors(old, lambda p: p["status"].update(podIPs=[{"ip": "10.0.0.256"}])) == [
            'status.podIPs[0]: Invalid value: "10.0.0.256": '
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        ]


def test_terminated_containers_stay_terminated_unless_restarted() -> None:
    old = stored(restartPolicy="Never")
    old["status"]["containerStatuses"] = [{"name": "app", "state": {"terminated": {"exitCode": 0}}}]
    revived = [{"name": "app", "state": {"running": {}}}]
    assert status_errors(old, lambda p: p["status"].update(containerStatuses=revived)) == [
        "status.containerStatuses[0].state: Forbidden: "
        "may not be transitioned to non-terminated state"
    ]
    always = stored()
    always["status"]["containerStatuses"] = old["status"]["containerStatuses"]
    assert status_errors(always, lambda p: p["status"].update(containerStatuses=revived)) == []
