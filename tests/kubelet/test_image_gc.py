"""The kubelet's image garbage collection on the virtual clock: images no container uses go,
least recently used first, once the image filesystem is above imageGCHighThresholdPercent,
down to imageGCLowThresholdPercent, never before imageMinimumGCAge; imageMaximumGCAge
deletes images unused for that long; FreeDiskSpaceFailed and ImageGCFailed when there is
nothing to free; and a separate image filesystem with its own eviction signal."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from tests.kubelet.conftest import CONFIG, EVENTS, NODES, PODS, Node, pod

from pinnace.kubelet.config import NodeConfig

MI = 2**20
NODE = dataclasses.replace(
    CONFIG,
    capacity={**CONFIG.capacity, "ephemeral-storage": "1000Mi"},
    image_sizes={f"docker.io/library/{name}": 290 * MI for name in ("a", "b", "c")},
    eviction_hard={"memory.available": "100Mi"},  # image GC alone frees the disk here
)


@pytest.fixture
def make_node() -> Iterator[Any]:
    nodes: list[Node] = []

    def make(config: NodeConfig = NODE) -> Node:
        nodes.append(Node(config))
        return nodes[-1]

    yield make
    for n in nodes:
        n.close()


def images(node: Node) -> list[str]:
    """node.status.images, after the next node status update."""
    node.settle(10)
    found = node.run(node.client.get(NODES, "", "node-1"))["status"].get("images") or []
    return sorted(i["names"][-1].rsplit("/", 1)[1] for i in found)


def run(node: Node, name: str, image: str, **annotations: str) -> None:
    body = pod(name, node="node-1", **annotations)
    body["spec"]["containers"][0].update(image=image, command=["sleep", "infinity"])
    node.create_pod(body)


def delete(node: Node, name: str) -> None:
    node.run(node.client.delete(PODS, "default", name))


def node_events(node: Node) -> list[tuple[str, str, int]]:
    """The image garbage collector's events on the node, with their counts."""
    found = node.run(node.client.list(EVENTS, "default"))["items"]
    return [
        (e["reason"], e["message"], e.get("count", 1))
        for e in found
        if e["reason"] in ("FreeDiskSpaceFailed", "ImageGCFailed")
    ]


def test_above_the_high_threshold_the_least_recently_used_images_go(make_node: Any) -> None:
    node = make_node()
    run(node, "first", "a:1")
    node.settle(5)
    run(node, "second", "b:1")
    node.settle(5)
    run(node, "third", "c:1")
    node.settle(5)
    delete(node, "first")
    node.settle(5)
    delete(node, "second")
    # 870Mi of images of 1000Mi: 87 %, above 85 %; a's 290Mi bring it under 80 %, and a was
    # used before b.
    node.settle(300)
    assert images(node) == ["b:1", "c:1"]
    assert node_events(node) == []


def test_images_younger_than_the_minimum_age_stay_and_the_failure_is_told(
    make_node: Any,
) -> None:
    node = make_node()
    node.settle(200)  # the first pass, at 300 s, finds c pulled less than 2 minutes before
    for name, image in (("first", "a:1"), ("second", "b:1"), ("third", "c:1")):
        run(node, name, image)
    node.settle(5)
    delete(node, "third")
    node.settle(100)
    failed = (
        "Failed to garbage collect required amount of images. Attempted to free "
        f"{1000 * MI * 20 // 100 - (1000 - 870) * MI} bytes, but only found 0 bytes eligible "
        "to free."
    )
    assert node_events(node) == [("FreeDiskSpaceFailed", failed, 1)]
    assert "c:1" in images(node)
    node.settle(300)  # c is old enough now: it goes, and the pass succeeds
    assert "c:1" not in images(node)
    assert node_events(node) == [("FreeDiskSpaceFailed", failed, 1)]


def test_nothing_to_free_twice_in_a_row_is_an_image_gc_failure(make_node: Any) -> None:
    node = make_node()
    for name, image in (("first", "a:1"), ("second", "b:1"), ("third", "c:1")):
        run(node, name, image)
    node.settle(610)
    [(first, message, twice), (then, repeated, once)] = node_events(node)
    assert (first, twice, then, once) == ("FreeDiskSpaceFailed", 2, "ImageGCFailed", 1)
    assert message == repeated


def test_images_unused_for_the_maximum_age_go(make_node: Any) -> None:
    node = make_node(dataclasses.replace(NODE, image_maximum_gc_age=600.0))
    run(node, "once", "a:1")
    node.settle(5)
    delete(node, "once")
    node.settle(590)  # the pass at 600 s: not yet imageMaximumGCAge since GC began
    assert "a:1" in images(node)
    node.settle(300)
    assert "a:1" not in images(node)


def test_a_separate_image_filesystem_has_its_own_signal(make_node: Any) -> None:
    config = dataclasses.replace(NODE, imagefs_capacity=1000 * MI, eviction_hard=None)
    config = dataclasses.replace(config, capacity={**CONFIG.capacity})
    node = make_node(config)
    run(node, "writer", "nginx:1.27", ephemeral_storage="900Mi")
    node.settle(2)
    summary = node.agent.summary().node
    assert summary.imagefs_capacity_bytes == 1000 * MI
    assert summary.imagefs_used_bytes > 900 * MI
    assert summary.nodefs_used_bytes < MI  # logs only
    node.settle(30)
    conditions = {c["type"]: c["status"] for c in node.agent.node["status"]["conditions"]}  # type: ignore[index]
    assert conditions["DiskPressure"] == "True"
    status = node.get_pod("writer")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert "The node was low on resource: ephemeral-storage." in status["message"]


def test_what_containers_write_counts_toward_the_high_threshold(make_node: Any) -> None:
    node = make_node()
    run(node, "old", "a:1")
    node.settle(5)
    delete(node, "old")
    run(node, "writer", "b:1", ephemeral_storage="350Mi")
    node.settle(5)
    # 580Mi of images and 350Mi of b's writable layer: 93 %; a's 290Mi bring it to 64 %
    node.settle(300)
    assert images(node) == ["b:1"]
    assert node_events(node) == []
