"""A StatefulSet in a plan: its pods are all made, `<name>-<ordinal>`, although nothing runs
in the plan's cluster (the StatefulSet controller would make one at a time, each once the one
before is Ready)."""

from __future__ import annotations

from pinnace.plan.materialize import materialize


def test_every_pod_of_a_stateful_set_is_made() -> None:
    web = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "nginx",
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }
    made = materialize([web])
    assert [p["metadata"]["name"] for p in made.pods] == ["web-0", "web-1", "web-2"]
    [owner] = made.objects["statefulsets"]
    assert owner["metadata"]["name"] == "web"
    assert made.skipped == []
