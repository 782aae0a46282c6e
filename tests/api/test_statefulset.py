"""StatefulSet (apps/v1) defaulting, strategy and validation vectors, worded as kube-apiserver
v1.32's pkg/apis/apps/validation."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps.statefulset import STATEFUL_SET


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def sts(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
            **spec,
        },
    }
    STATEFUL_SET.default(obj)
    return obj


def test_served_as_sts_in_all_with_scale() -> None:
    assert catalog.resolve("sts") is STATEFUL_SET
    assert catalog.by_kind("apps/v1", "StatefulSet") is STATEFUL_SET
    assert STATEFUL_SET.subresources == ("scale", "status")
    assert STATEFUL_SET.categories == ("all",)


def test_defaults() -> None:
    spec = sts(
        volumeClaimTemplates=[
            {"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
        ]
    )["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"]) == ("v1", "PersistentVolumeClaim")
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["status"] == {"phase": "Pending"}


def test_on_delete_gets_no_rolling_update() -> None:
    strategy = sts(updateStrategy={"type": "OnDelete"})["spec"]["updateStrategy"]
    assert strategy == {"type": "OnDelete"}


def test_create_resets_status_and_drops_max_unavailable() -> None:
    obj = sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    obj["status"] = {"replicas": 9}
    STATEFUL_SET.prepare_for_create(obj)
    assert obj["status"] == {"replicas": 0, "availableReplicas": 0}
    assert obj["metadata"]["generation"] == 1
    assert obj["spec"]["updateStrategy"]["rollingUpdate"] == {"partition": 0}


def test_the_docs_web_example_is_valid() -> None:
    assert STATEFUL_SET.validate(sts()) == []


def test_name_must_be_a_dns_label() -> None:
    obj = sts()
    obj["metadata"]["name"] = "web.v1"
    assert messages(STATEFUL_SET.validate(obj)) == [
        'metadata.name: Invalid value: "web.v1": must not contain dots'
    ]


def test_spec_errors() -> None:
    obj = sts(podManagementPolicy="Random", replicas=-1, minReadySeconds=-1)
    obj["spec"]["updateStrategy"] = {"type": "Sometimes"}
    obj["spec"]["persistentVolumeClaimRetentionPolicy"] = {
        "whenDeleted": "Keep",
        "whenScaled": "Retain",
    }
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert messages(STATEFUL_SET.validate(obj)) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        'spec.updateStrategy: Invalid value: apps.StatefulSetUpdateStrategy{Type:"Sometimes", '
        "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' "
        "or 'OnDelete'",
        'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": '
        'supported values: "Retain", "Delete"',
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
        "`selector` does not match template `labels`",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]


def test_selector_and_partition() -> None:
    obj = sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}})
    del obj["spec"]["selector"]
    assert messages(STATEFUL_SET.validate(obj)) == [
        "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than "
        "or equal to 0",
        "spec.selector: Required value",
        # An absent selector selects nothing: the template's labels do not match it.
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"nginx"}: '
        "`selector` does not match template `labels`",
    ]
    obj = sts(selector={})
    assert messages(STATEFUL_SET.validate(obj)) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for "
        "statefulset"
    ]


def test_on_delete_with_rolling_update_is_refused() -> None:
    obj = sts(updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}})
    assert messages(STATEFUL_SET.validate(obj)) == [
        "spec.updateStrategy.rollingUpdate: Invalid value: "
        "apps.RollingUpdateStatefulSetStrategy{Partition:1, "
        "MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy "
        "'RollingUpdate'"
    ]


def test_the_pod_spec_is_not_validated_as_in_v1_32() -> None:
    obj = sts()
    obj["spec"]["template"]["spec"]["containers"][0]["name"] = "Not_A_Name"
    assert STATEFUL_SET.validate(obj) == []


def test_update_may_change_only_some_fields() -> None:
    old = sts()
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    new["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert STATEFUL_SET.validate_update(new, old) == []
    new["spec"]["serviceName"] = "other"
    assert messages(STATEFUL_SET.validate_update(new, old)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]


def test_status_bounds() -> None:
    old = sts()
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2}
    assert messages(STATEFUL_SET.validate_status_update(new, old)) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas",
    ]
