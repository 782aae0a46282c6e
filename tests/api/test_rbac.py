"""RBAC kinds' update checks (v1.32 ValidateRoleBindingUpdate, ValidateClusterRoleBindingUpdate):
a binding's roleRef cannot change; a role's rules may."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.kind import Kind
from pinnace.api.rbac.kinds import CLUSTER_ROLE_BINDING, GROUP, ROLE, ROLE_BINDING


def binding(kind: Kind, role: str) -> dict[str, Any]:
    meta = {"name": "b", "resourceVersion": "1"}
    if kind.namespaced:
        meta["namespace"] = "team"
    return {
        "metadata": meta,
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "ann"}],
    }


@pytest.mark.parametrize("kind", [ROLE_BINDING, CLUSTER_ROLE_BINDING])
def test_a_bindings_role_ref_cannot_change(kind: Kind) -> None:
    old = binding(kind, "view")
    assert kind.validate_update(binding(kind, "view"), old) == []
    errs = kind.validate_update(binding(kind, "edit"), old)
    assert [(e.field, e.detail) for e in errs] == [("roleRef", "cannot change roleRef")]


def test_a_roles_rules_may_change() -> None:
    meta = {"name": "r", "namespace": "team", "resourceVersion": "1"}
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    old = {"metadata": meta, "rules": [rule]}
    new = {"metadata": dict(meta), "rules": [{**rule, "verbs": ["get", "list"]}]}
    assert ROLE.validate_update(new, old) == []
