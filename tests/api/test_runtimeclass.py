"""RuntimeClass (node.k8s.io/v1) validation vectors, worded as kube-apiserver v1.32's
pkg/apis/node/validation."""

from __future__ import annotations

from typing import Any

from pinnace.api import catalog
from pinnace.api.node.runtimeclass import RUNTIME_CLASS

DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def rc(handler: Any = "kata-fc", **parts: Any) -> dict[str, Any]:
    return {"metadata": {"name": "kata-fc", "resourceVersion": "1"}, "handler": handler, **parts}


def test_served_at_node_k8s_io_v1_cluster_wide_without_short_names() -> None:
    assert catalog.resolve("runtimeclass") is RUNTIME_CLASS
    assert catalog.by_kind("node.k8s.io/v1", "RuntimeClass") is RUNTIME_CLASS
    assert (RUNTIME_CLASS.plural, RUNTIME_CLASS.namespaced) == ("runtimeclasses", False)
    assert RUNTIME_CLASS.short_names == ()


def test_the_docs_pod_overhead_class_is_valid() -> None:
    obj = rc(overhead={"podFixed": {"memory": "120Mi", "cpu": "250m"}})
    assert RUNTIME_CLASS.validate(obj) == []


def test_handler_must_be_a_dns_label() -> None:
    assert messages(RUNTIME_CLASS.validate(rc(""))) == [f'handler: Invalid value: "": {DNS_LABEL}']
    assert messages(RUNTIME_CLASS.validate(rc("Kata_FC"))) == [
        f'handler: Invalid value: "Kata_FC": {DNS_LABEL}'
    ]


def test_overhead_quantities_are_checked_as_limits() -> None:
    obj = rc(overhead={"podFixed": {"cpu": "-250m", "example.com/foo": "1"}})
    assert messages(RUNTIME_CLASS.validate(obj)) == [
        'overhead.limits[cpu]: Invalid value: "-250m": must be greater than or equal to 0'
    ]
    obj = rc(overhead={"podFixed": {"disk": "1"}})
    assert messages(RUNTIME_CLASS.validate(obj)) == [
        'overhead.limits[disk]: Invalid value: "disk": must be a standard resource type or fully '
        "qualified",
        'overhead.limits[disk]: Invalid value: "disk": must be a standard resource for containers',
    ]


def test_scheduling_node_selector_and_tolerations() -> None:
    scheduling = {
        "nodeSelector": {"bad key": "v"},
        "tolerations": [{"operator": "Equal", "value": "x"}],
    }
    assert messages(RUNTIME_CLASS.validate(rc(scheduling=scheduling))) == [
        'scheduling.nodeSelector: Invalid value: "bad key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'scheduling.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
        '`key` is empty, which means "match all values and all keys"',
    ]


def test_a_toleration_may_appear_once() -> None:
    same = {"key": "kata", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    scheduling = {"tolerations": [same, {**same, "effect": "NoExecute"}, dict(same)]}
    assert messages(RUNTIME_CLASS.validate(rc(scheduling=scheduling))) == [
        'scheduling.tolerations[2]: Duplicate value: core.Toleration{Key:"kata", '
        'Operator:"Equal", Value:"yes", Effect:"NoSchedule", TolerationSeconds:(*int64)(nil)}'
    ]


def test_handler_is_immutable_and_the_rest_is_not() -> None:
    old = rc()
    changed = rc(overhead={"podFixed": {"cpu": "1"}}, scheduling={"nodeSelector": {"a": "b"}})
    assert RUNTIME_CLASS.validate_update(changed, old) == []
    assert messages(RUNTIME_CLASS.validate_update(rc("runc"), old)) == [
        'handler: Invalid value: "runc": field is immutable'
    ]


def test_runtime_classes_are_cluster_scoped() -> None:
    obj = rc()
    obj["metadata"]["namespace"] = "default"
    assert messages(RUNTIME_CLASS.validate(obj)) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
