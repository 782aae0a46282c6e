"""The rules an aggregated ClusterRole gathers: selector by selector, each selector's roles in
name order, each rule once (clusterroleaggregation's syncClusterRole, v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.controllers.clusterrole_aggregation import aggregated_rules


def role(name: str, labels: dict[str, str], *resources: str) -> dict[str, Any]:
    rules = [{"apiGroups": [""], "resources": [r], "verbs": ["get"]} for r in resources]
    return {"metadata": {"name": name, "labels": labels}, "rules": rules}


def test_rules_come_selector_by_selector_then_by_name_each_once() -> None:
    selectors = [{"matchLabels": {"to": "second"}}, {"matchLabels": {"to": "first"}}]
    aggregate = {
        "metadata": {"name": "agg", "labels": {"to": "first"}},
        "aggregationRule": {"clusterRoleSelectors": selectors},
    }
    roles = [
        aggregate,
        role("a", {"to": "first"}, "pods", "secrets"),
        role("z", {"to": "second"}, "nodes", "pods"),
        role("b", {"to": "second"}, "services"),
    ]
    resources = [r["resources"][0] for r in aggregated_rules(aggregate, roles)]
    assert resources == ["services", "nodes", "pods", "secrets"]
