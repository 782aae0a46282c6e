"""Namespace: defaulting, the create/update/status/finalize strategy and validation (v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.namespace import (
    NAMESPACE,
    validate_namespace_finalize_update,
)


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def created(body: dict[str, Any]) -> dict[str, Any]:
    NAMESPACE.default(body)
    NAMESPACE.prepare_for_create(body)
    return body


def test_defaults_label_finalizer_and_phase() -> None:
    ns = created({"metadata": {"name": "team-a"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert NAMESPACE.validate(ns) == []


def test_the_name_label_cannot_be_overridden() -> None:
    ns = created({"metadata": {"name": "a", "labels": {"kubernetes.io/metadata.name": "b"}}})
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "a"


def test_create_resets_status_and_keeps_other_finalizers() -> None:
    ns = created(
        {
            "metadata": {"name": "a"},
            "spec": {"finalizers": ["example.com/x"]},
            "status": {"phase": "Terminating"},
        }
    )
    assert ns["spec"]["finalizers"] == ["example.com/x", "kubernetes"]
    assert ns["status"] == {"phase": "Active"}


def test_name_is_a_dns_label() -> None:
    ns = created({"metadata": {"name": "a.b"}})
    assert messages(NAMESPACE.validate(ns)) == [
        'metadata.name: Invalid value: "a.b": must not contain dots'
    ]


def test_namespaces_have_no_namespace() -> None:
    ns = created({"metadata": {"name": "a", "namespace": "default"}})
    assert messages(NAMESPACE.validate(ns)) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]


def test_spec_finalizer_names() -> None:
    ns = created({"metadata": {"name": "a"}, "spec": {"finalizers": ["cleanup"]}})
    assert messages(NAMESPACE.validate(ns)) == [
        'spec.finalizers: Invalid value: "cleanup": name is neither a standard finalizer name '
        "nor is it fully qualified"
    ]


OLD = {
    "metadata": {
        "name": "a",
        "uid": "u",
        "resourceVersion": "3",
        "labels": {"kubernetes.io/metadata.name": "a"},
    },
    "spec": {"finalizers": ["kubernetes"]},
    "status": {"phase": "Active"},
}


def test_update_keeps_finalizers_and_status() -> None:
    new = {
        "metadata": dict(OLD["metadata"], labels={"x": "y"}),
        "spec": {"finalizers": []},
        "status": {"phase": "Terminating"},
    }
    NAMESPACE.default(new)
    NAMESPACE.prepare_for_update(new, OLD)
    assert new["spec"] == {"finalizers": ["kubernetes"]}
    assert new["status"] == {"phase": "Active"}
    assert new["metadata"]["labels"] == {"x": "y", "kubernetes.io/metadata.name": "a"}
    assert NAMESPACE.validate_update(new, OLD) == []


def test_status_phase_follows_deletion() -> None:
    new = {"metadata": dict(OLD["metadata"]), "status": {"phase": "Terminating"}}
    NAMESPACE.prepare_for_status_update(new, OLD)
    assert new["spec"] == OLD["spec"]
    assert messages(NAMESPACE.validate_status_update(new, OLD)) == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if "
        "`deletionTimestamp` is empty"
    ]
    deleting = dict(OLD["metadata"], deletionTimestamp="2024-01-01T00:00:00Z")
    old = dict(OLD, metadata=deleting)
    active = {"metadata": deleting, "status": {"phase": "Active"}}
    assert messages(NAMESPACE.validate_status_update(active, old)) == [
        "status.Phase: Invalid value: \"Active\": may only be 'Terminating' if "
        "`deletionTimestamp` is not empty"
    ]


def test_finalize_removes_finalizers_and_checks_names_by_index() -> None:
    new = {
        "metadata": dict(OLD["metadata"]),
        "spec": {"finalizers": []},
        "status": {"phase": "Terminating"},
    }
    NAMESPACE.subresource_updates["finalize"][0](new, OLD)
    assert new["status"] == {"phase": "Active"}
    assert validate_namespace_finalize_update(new, OLD) == []
    bad = {"metadata": dict(OLD["metadata"]), "spec": {"finalizers": ["kubernetes", "x"]}}
    assert messages(validate_namespace_finalize_update(bad, OLD)) == [
        'spec.finalizers[1]: Invalid value: "x": name is neither a standard finalizer name nor '
        "is it fully qualified"
    ]
