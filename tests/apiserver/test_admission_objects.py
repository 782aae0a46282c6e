"""Admission reads namespaces, LimitRanges, PriorityClasses, ResourceQuotas and RuntimeClasses
from memory: what it sees must always be what the store holds, whoever wrote it and when."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.limit_ranger import LIMIT_RANGER_ANNOTATION
from pinnace.apiserver.keys import object_key

PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
LIMIT_RANGES = catalog.kind("", "limitranges")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
QUOTAS = catalog.kind("", "resourcequotas")


def limit_range(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": cpu}}]},
    }


def create_pod(api: Harness, name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }
    return api.call(api.server.create, PODS, "team", body).obj


def refusal(api: Harness, name: str, **spec: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        create_pod(api, name, **spec)
    return info.value


@pytest.fixture
def team(api: Harness) -> Harness:
    api.call(api.server.create, NAMESPACES, "", {"metadata": {"name": "team"}})
    return api


def test_objects_stored_before_and_after_the_first_admission_are_seen(team: Harness) -> None:
    api = team
    # Straight into the store, as a reopened store holds it, before admission first looks.
    stored = dict(limit_range("b-first", "100m"), kind="LimitRange", apiVersion="v1")
    api.run(api.server.store.create(object_key(LIMIT_RANGES, "team", "b-first"), stored))
    assert create_pod(api, "one")["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m"}
    }
    api.call(api.server.create, LIMIT_RANGES, "team", limit_range("a-second", "200m"))
    pod = create_pod(api, "two")
    # Applied in key order: the later in order sets nothing the earlier did not.
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "200m"}}
    assert "b-first" not in pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION]
    for name in ("a-second", "b-first"):
        api.call(api.server.delete, LIMIT_RANGES, "team", name)
    pod = create_pod(api, "three")
    assert pod["spec"]["containers"][0].get("resources") == {}
    assert LIMIT_RANGER_ANNOTATION not in (pod["metadata"].get("annotations") or {})


def test_priority_classes_come_and_go(team: Harness) -> None:
    api = team
    assert refusal(api, "early", priorityClassName="batch").code == 403
    body = {"metadata": {"name": "batch"}, "value": 1000}
    api.call(api.server.create, PRIORITY_CLASSES, "", body)
    assert create_pod(api, "admitted", priorityClassName="batch")["spec"]["priority"] == 1000
    api.call(api.server.delete, PRIORITY_CLASSES, "", "batch")
    assert refusal(api, "late", priorityClassName="batch").code == 403


def test_a_quota_counts_from_its_creation_until_its_deletion(team: Harness) -> None:
    api = team
    create_pod(api, "before")
    quota = {"metadata": {"name": "pods", "namespace": "team"}, "spec": {"hard": {"pods": "2"}}}
    api.call(api.server.create, QUOTAS, "team", quota)
    create_pod(api, "within")
    assert "exceeded quota" in refusal(api, "over").message
    api.call(api.server.delete, QUOTAS, "team", "pods")
    create_pod(api, "unlimited")


def test_a_namespace_terminating_or_gone_admits_no_more_creates(team: Harness) -> None:
    api = team
    create_pod(api, "web")
    marked = api.call(api.server.delete, NAMESPACES, "", "team").obj
    assert "is being terminated" in refusal(api, "late").message
    finalized = {**marked, "spec": {"finalizers": []}}
    api.call(api.server.update, NAMESPACES, "", "team", finalized, None, "finalize")
    with pytest.raises(StatusError):
        api.call(api.server.get, NAMESPACES, "", "team")
    assert refusal(api, "later").message == 'namespaces "team" not found'
