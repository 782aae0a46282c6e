"""The active pods grouped by controller, namespace and labels (`ActivePodGroups`), kept change by
change, are what grouping the pods afresh gives, whatever the changes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pinnace.api.objects import Object
from pinnace.controllers.controller_utils import (
    controller_ref,
    is_pod_active,
    is_pod_ready,
    ready_since,
)
from pinnace.controllers.ownership import ActivePodGroups

UIDS = ("", "rs-a", "rs-b")
NAMESPACES = ("default", "other")


def _pod(rng: random.Random, name: str) -> Object:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": rng.choice(NAMESPACES),
        "labels": {"app": rng.choice("xy"), **({"tier": "web"} if rng.random() < 0.3 else {})},
    }
    uid = rng.choice(UIDS)
    if uid:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "uid": uid, "controller": True}]
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    ready = rng.choice(["True", "False", None])
    conditions = []
    if ready is not None:
        when = rng.choice(["2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z", None])
        condition = {"type": "Ready", "status": ready}
        if when:
            condition["lastTransitionTime"] = when
        conditions.append(condition)
    phase = rng.choice(["Pending", "Running", "Running", "Succeeded", "Failed"])
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


def _afresh(pods: dict[str, Object]) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for key, pod in pods.items():
        if not is_pod_active(pod):
            continue
        uid = (controller_ref(pod) or {}).get("uid", "")
        labels = pod["metadata"]["labels"]
        group = found.setdefault((uid, pod["metadata"]["namespace"]), {})
        pods_in, ready = group.setdefault(tuple(sorted(labels.items())), ({}, {}))
        pods_in[key] = None
        if is_pod_ready(pod):
            ready[key] = ready_since(pod)
    return found


def _kept(groups: ActivePodGroups) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for uid in UIDS:
        for namespace in NAMESPACES:
            listed = groups.groups(uid, namespace)
            if listed:
                found[(uid, namespace)] = {
                    tuple(sorted(g.labels.items())): (g.pods, g.ready) for g in listed
                }
            assert all(g.namespace == namespace and g.pods for g in listed)
    return found


@pytest.mark.parametrize("seed", range(5))
def test_groups_kept_change_by_change_equal_the_pods_grouped_afresh(seed: int) -> None:
    rng = random.Random(seed)
    groups = ActivePodGroups()
    pods: dict[str, Object] = {}
    for step in range(400):
        key = f"pod-{rng.randrange(30)}"
        old = pods.get(key)
        if old is not None and rng.random() < 0.3:
            del pods[key]
            groups.changed(key, old, None)
        else:
            pods[key] = _pod(rng, key)
            groups.changed(key, old, pods[key])
        assert _kept(groups) == _afresh(pods), f"step {step}"


def test_a_status_write_that_leaves_the_group_alone_refiles_readiness() -> None:
    groups = ActivePodGroups()
    meta = {"name": "p", "namespace": "default", "labels": {"app": "x"}}

    def pod(ready: str) -> Object:
        condition = {"type": "Ready", "status": ready, "lastTransitionTime": "2025-01-01T00:00:00Z"}
        return {"metadata": meta, "status": {"phase": "Running", "conditions": [condition]}}

    groups.changed("default/p", None, pod("False"))
    groups.changed("default/p", pod("False"), pod("True"))
    (group,) = groups.groups("", "default")
    assert list(group.pods) == ["default/p"] and list(group.ready) == ["default/p"]
    groups.changed("default/p", pod("True"), pod("False"))
    (group,) = groups.groups("", "default")
    assert list(group.pods) == ["default/p"] and not group.ready
