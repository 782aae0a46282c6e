"""Lists by label selector (equality and set-based, with field selectors too), paged, as
kube-apiserver answers them: the objects that match in key order, `limit` of them a page, every
page at the first one's resourceVersion, no remainingItemCount. The store keeps the latest
objects as written, older ones packed and, past compaction, settled: a list reads all three."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.options import ListOptions
from pinnace.store import MemoryStore

PODS = catalog.kind("", "pods")
Labels = dict[str, str]


@pytest.fixture
def api() -> Iterator[Harness]:
    """40 pods in "default"; the first 15 settled by compaction, the last 5 as written."""
    harness = Harness(MemoryStore(recent_versions=5, settled_block=4))
    for i in range(40):
        harness.call(harness.server.create, PODS, "default", _pod(i))
    harness.call(harness.server.store.compact, harness.server.store.revision - 25)
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)


def _pod(i: int) -> dict[str, Any]:
    labels = {
        "app": ("web", "db", "cache")[i % 3],
        "shard": str(i),
        "app.kubernetes.io/part-of": "shop",
    }
    if i % 4 == 0:
        labels["canary"] = ""
    # Half the pods' texts hold labels selectors want, as annotations.
    annotations = {"app": "web", "canary": ""} if i % 2 else {}
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if i % 5 == 0:
        spec["nodeName"] = "n1"
    metadata = {"name": f"p{i:02}", "labels": labels, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


CASES: list[tuple[str, str, Callable[[Labels, dict[str, Any]], bool]]] = [
    ("app=web", "", lambda labels, spec: labels["app"] == "web"),
    ("app==db,canary", "", lambda labels, spec: labels["app"] == "db" and "canary" in labels),
    (
        "app in (web,cache),shard notin (3,6)",
        "",
        lambda labels, spec: labels["app"] != "db" and labels["shard"] not in ("3", "6"),
    ),
    (
        "!canary,app!=web",
        "",
        lambda labels, spec: "canary" not in labels and labels["app"] != "web",
    ),
    ("shard>30,app.kubernetes.io/part-of", "", lambda labels, spec: int(labels["shard"]) > 30),
    ("canary in ()", "", lambda labels, spec: labels.get("canary") == ""),
    (
        "app=web",
        "spec.nodeName=n1",
        lambda labels, spec: labels["app"] == "web" and spec.get("nodeName") == "n1",
    ),
    (
        "shard<20",
        "spec.nodeName!=n1",
        lambda labels, spec: int(labels["shard"]) < 20 and spec.get("nodeName") != "n1",
    ),
    ("app=none", "", lambda labels, spec: False),
    # Terms on one field, and on several fields among them: every term holds.
    ("", "spec.nodeName!=n1,spec.nodeName!=n2", lambda labels, spec: spec.get("nodeName") != "n1"),
    (
        "",
        "spec.nodeName=n1,spec.restartPolicy=Always,spec.nodeName!=n2",
        lambda labels, spec: spec.get("nodeName") == "n1",
    ),
    ("", "spec.nodeName=n1,spec.nodeName!=n1", lambda labels, spec: False),
]


def _expected(api: Harness, wanted: Callable[[Labels, dict[str, Any]], bool]) -> list[str]:
    everything = api.call(api.server.list, PODS, "default", ListOptions())["items"]
    assert len(everything) == 40
    return [p["metadata"]["name"] for p in everything if wanted(p["metadata"]["labels"], p["spec"])]


@pytest.mark.parametrize(
    ("labels", "fields", "wanted"), CASES, ids=[f"{c[0]}|{c[1]}" for c in CASES]
)
def test_a_selector_list_holds_the_matching_objects_in_key_order(
    api: Harness, labels: str, fields: str, wanted: Callable[[Labels, dict[str, Any]], bool]
) -> None:
    listed = api.call(
        api.server.list, PODS, "default", ListOptions(label_selector=labels, field_selector=fields)
    )
    assert [p["metadata"]["name"] for p in listed["items"]] == _expected(api, wanted)
    assert listed["metadata"] == {"resourceVersion": str(api.server.store.revision)}


@pytest.mark.parametrize("limit", [1, 3, 7])
@pytest.mark.parametrize(
    ("labels", "fields", "wanted"), CASES, ids=[f"{c[0]}|{c[1]}" for c in CASES]
)
def test_selector_list_pages_hold_limit_matches_at_one_resource_version(
    api: Harness,
    labels: str,
    fields: str,
    wanted: Callable[[Labels, dict[str, Any]], bool],
    limit: int,
) -> None:
    expected = _expected(api, wanted)
    options = ListOptions(label_selector=labels, field_selector=fields, limit=limit)
    pages = [api.call(api.server.list, PODS, "default", options)]
    # Written meanwhile, matching every selector that p00 matches: the pages never show it.
    api.call(
        api.server.create,
        PODS,
        "default",
        {**_pod(0), "metadata": {**_pod(0)["metadata"], "name": "p99"}},
    )
    while token := pages[-1]["metadata"].get("continue"):
        options = ListOptions(
            label_selector=labels, field_selector=fields, limit=limit, continue_token=token
        )
        pages.append(api.call(api.server.list, PODS, "default", options))
    names = [[p["metadata"]["name"] for p in page["items"]] for page in pages]
    assert [name for page in names for name in page] == expected
    assert all(len(page) == limit for page in names[:-1])
    assert {page["metadata"]["resourceVersion"] for page in pages} == {
        str(api.server.store.revision - 1)
    }
    assert all("remainingItemCount" not in page["metadata"] for page in pages)
